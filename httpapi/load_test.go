package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/database"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/trash"
)

// loadResult is one answer of the load test.
type loadResult struct {
	op         string
	status     int
	retryAfter string
	key        string
	took       time.Duration
}

// TestLoad300Clients is fault 2: 300 concurrent clients against the handler
// on PostgreSQL with the default bounded pool. Every answer is a 200 or a
// 503 with Retry-After and service_unavailable; none is a 500. A second run
// with a request deadline too short for most requests to get a connection
// turns many answers into 503s, and still no 500.
//
// Each client sends DESKKIT_LOAD_ROUNDS mixed requests (3 by default); for
// the figures, run more:
//
//	DESKKIT_LOAD_ROUNDS=30 go test ./httpapi -run TestLoad300Clients -v
func TestLoad300Clients(t *testing.T) {
	const clients = 300
	rounds := 3
	if s := os.Getenv("DESKKIT_LOAD_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("DESKKIT_LOAD_ROUNDS=%q: want a positive integer", s)
		}
		rounds = n
	}
	db := dbtest.OpenPostgres(t)
	// The pool the reference server opens: database.Options' default.
	db.SetMaxOpenConns(database.DefaultMaxOpenConns())
	db.SetMaxIdleConns(database.DefaultMaxOpenConns())
	f := newAPI(t, db)
	ctx := context.Background()
	admin := users["admin"]
	// Entries to restore, one per run, client and round, spread over 10
	// projects.
	var targetID int64
	addEntries := func(t *testing.T) []int64 {
		entries := make([]int64, clients*rounds)
		for i := range entries {
			targetID++
			e, err := f.trash.Add(ctx, db, admin, trash.NewEntry{ProjectID: int64(i%10 + 1), TargetType: trash.TargetTask,
				TargetID: targetID, TargetName: fmt.Sprintf("Task %d alpha", targetID), CreatedBy: admin.UserID})
			if err != nil {
				t.Fatal(err)
			}
			entries[i] = e.ID
		}
		return entries
	}

	for _, tc := range []struct {
		name    string
		timeout time.Duration
	}{
		{"default deadline", DefaultRequestTimeout},
		{"short deadline", 2 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			entries := addEntries(t)
			srv := newAPIWith(t, db, func(c *Config) { c.RequestTimeout = tc.timeout }).srv
			ts := httptest.NewServer(srv)
			defer ts.Close()
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
			defer client.CloseIdleConnections()

			results := make([][]loadResult, clients)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for c := range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					for r := range rounds {
						var op, method, target string
						switch (c + r) % 3 {
						case 0:
							op, method, target = "search", "GET", fmt.Sprintf("/api/v1/task/trash/search?targetType=TASK&targetName=alpha&projectId=%d&pageSize=10", c%10+1)
						case 1:
							op, method, target = "count", "GET", fmt.Sprintf("/api/v1/task/trash/count?projectId=%d", c%10+1)
						default:
							op, method, target = "restore", "PATCH", fmt.Sprintf("/api/v1/task/trash/%d/back", entries[c*rounds+r])
						}
						res := loadRequest(client, ts.URL, method, target)
						res.op = op
						results[c] = append(results[c], res)
					}
				}()
			}
			began := time.Now()
			close(start)
			wg.Wait()
			elapsed := time.Since(began)

			var all []loadResult
			for _, rs := range results {
				all = append(all, rs...)
			}
			byStatus := map[int]int{}
			var took []time.Duration
			byOp := map[string][]time.Duration{}
			for _, r := range all {
				byStatus[r.status]++
				took = append(took, r.took)
				byOp[r.op] = append(byOp[r.op], r.took)
				switch {
				case r.status == http.StatusOK:
				case r.status == http.StatusServiceUnavailable && r.retryAfter != "" && r.key == KeyServiceUnavailable:
				default:
					t.Errorf("answer %d Retry-After %q key %q: want 200, or 503 with Retry-After", r.status, r.retryAfter, r.key)
				}
			}
			if len(all) != clients*rounds {
				t.Fatalf("%d answers, want %d", len(all), clients*rounds)
			}
			slices.Sort(took)
			t.Logf("%d clients x %d requests in %s: %.0f requests/s, p50 %s, p99 %s, max %s; statuses %v (pool %d, deadline %s)",
				clients, rounds, elapsed.Round(time.Millisecond), float64(len(all))/elapsed.Seconds(),
				took[len(took)/2].Round(time.Microsecond), took[len(took)*99/100].Round(time.Microsecond), took[len(took)-1].Round(time.Microsecond),
				byStatus, database.DefaultMaxOpenConns(), tc.timeout)
			for _, op := range []string{"search", "count", "restore"} {
				ts := byOp[op]
				slices.Sort(ts)
				t.Logf("  %s: p50 %s, p99 %s", op, ts[len(ts)/2].Round(time.Microsecond), ts[len(ts)*99/100].Round(time.Microsecond))
			}
			if byStatus[http.StatusInternalServerError] != 0 {
				t.Errorf("%d answers were 500", byStatus[http.StatusInternalServerError])
			}
		})
	}
	// Nothing left half-done: every entry is restored or still there, and
	// the counts agree with the rows.
	var rows int64
	if err := db.NewSelect().Table("deskkit_trash").ColumnExpr("count(*)").Scan(ctx, &rows); err != nil {
		t.Fatal(err)
	}
	var counted int64
	for p := int64(1); p <= 10; p++ {
		n, err := f.trash.Count(ctx, deskkit.Principal{UserID: 1, TenantID: 1}, p)
		if err != nil {
			t.Fatal(err)
		}
		counted += n
	}
	if counted != rows {
		t.Errorf("counts say %d entries, the table holds %d", counted, rows)
	}
}

func loadRequest(client *http.Client, base, method, target string) loadResult {
	req, err := http.NewRequest(method, base+target, nil)
	if err != nil {
		return loadResult{status: -1}
	}
	req.Header.Set("Authorization", "Bearer admin")
	began := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return loadResult{status: -1, key: err.Error()}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	r := loadResult{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), took: time.Since(began)}
	if resp.StatusCode != http.StatusOK {
		var env struct {
			Ext map[string]string `json:"ext"`
		}
		if jsonErr := json.Unmarshal(body, &env); jsonErr == nil {
			r.key = env.Ext["eKey"]
		}
	}
	return r
}
