package httpapi

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/deskkit/deskkit/internal/database"
)

// The baseline is what deskkit's fixed per-request cost is measured
// against: a minimal net/http + database/sql handler on the same driver
// (pgdriver) and pool size, running the statements deskkit runs (the
// token lookup included; no cache) and answering the same JSON. Each
// BenchmarkVsBaseline sub-benchmark first checks both of those: the
// statements deskkit ran, captured with a bun query hook, equal the
// baseline's with their arguments written in, and both answers are equal
// but for the datetime. Then every iteration sends one request to each,
// through httptest servers and one client, alternating which goes first,
// from c clients at once; it reports both medians and the ratios
// deskkit/baseline of p50, p99 and the mean:
//
//	DESKKIT_BENCH_DATABASE_URL='postgres://postgres@127.0.0.1:5432/test?sslmode=disable' \
//	    go test ./httpapi -run '^$' -bench VsBaseline -benchtime 2000x -count 3

// Statements of the baseline, as deskkit writes them (pgdriver sends
// every statement as text, its arguments written in, so $n placeholders
// here and bun's formatting there send the same bytes).
const (
	baseTokenSQL = `SELECT u.id, u.tenant_id, u.admin, k.token_hash, k.expires_at FROM bench_tokens AS k JOIN bench_users AS u ON u.id = k.user_id AND u.tenant_id = k.tenant_id WHERE k.token_hash = $1 LIMIT 1`
	baseCountSQL = `SELECT coalesce(sum(entries), 0) FROM deskkit_trash_counts WHERE tenant_id = $1 AND project_id = $2`
	// $3 is the LIKE pattern of the name term.
	baseWhereSQL  = `WHERE (t.tenant_id = $1) AND (t.target_type = $2) AND (t.target_name_folded LIKE $3 ESCAPE '\')`
	baseColumns   = `"t"."id", "t"."tenant_id", "t"."project_id", "t"."target_type", "t"."target_id", "t"."target_name", "t"."target_name_folded", "t"."sprint_id", "t"."created_by", "t"."deleted_by", "t"."deleted_date"`
	basePageSQL   = `SELECT ` + baseColumns + ` FROM "deskkit_trash" AS "t" WHERE (t.id IN (SELECT "t"."id" FROM deskkit_trash AS t ` + baseWhereSQL + ` ORDER BY t.id DESC LIMIT $4)) ORDER BY t.id DESC`
	baseTotalSQL  = `SELECT count(*) FROM deskkit_trash AS t ` + baseWhereSQL
	benchRareTerm = "zephyr"
)

// baseline is the minimal handler: the count and a name search of tasks,
// page 1, newest first.
type baseline struct{ db *sql.DB }

type baseEnvelope struct {
	Code     string         `json:"code"`
	Msg      string         `json:"msg"`
	Data     any            `json:"data"`
	Datetime string         `json:"datetime"`
	Ext      map[string]any `json:"ext"`
}

type baseEntry struct {
	ID            int64      `json:"id"`
	TenantID      int64      `json:"tenantId"`
	ProjectID     int64      `json:"projectId"`
	TargetType    string     `json:"targetType"`
	TargetID      int64      `json:"targetId"`
	TargetName    string     `json:"targetName"`
	SprintID      *int64     `json:"sprintId"`
	CreatedBy     int64      `json:"createdBy"`
	DeletedBy     int64      `json:"deletedBy"`
	DeletedDate   time.Time  `json:"deletedDate"`
	PurgeDate     *time.Time `json:"purgeDate"`
	DeletedByName string     `json:"deletedByName"`
}

func (h baseline) fail(w http.ResponseWriter, status int) {
	w.WriteHeader(status)
}

func (h baseline) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		h.fail(w, http.StatusUnauthorized)
		return
	}
	sum := sha256.Sum256([]byte(token))
	var userID, tenantID int64
	var admin bool
	var hash string
	var expires sql.NullTime
	err := h.db.QueryRowContext(ctx, baseTokenSQL, hex.EncodeToString(sum[:])).Scan(&userID, &tenantID, &admin, &hash, &expires)
	if err != nil || (expires.Valid && !time.Now().Before(expires.Time)) {
		h.fail(w, http.StatusUnauthorized)
		return
	}
	q := r.URL.Query()
	var data any
	switch r.URL.Path {
	case Prefix + "/task/trash/count":
		project, err := strconv.ParseInt(q.Get("projectId"), 10, 64)
		if err != nil {
			h.fail(w, http.StatusBadRequest)
			return
		}
		var n int64
		if err := h.db.QueryRowContext(ctx, baseCountSQL, tenantID, project).Scan(&n); err != nil {
			h.fail(w, http.StatusInternalServerError)
			return
		}
		data = n
	case Prefix + "/task/trash/search":
		size, err := strconv.Atoi(q.Get("pageSize"))
		if err != nil {
			h.fail(w, http.StatusBadRequest)
			return
		}
		pattern := "%" + strings.ToLower(q.Get("targetName")) + "%"
		rows, err := h.db.QueryContext(ctx, basePageSQL, tenantID, q.Get("targetType"), pattern, size)
		if err != nil {
			h.fail(w, http.StatusInternalServerError)
			return
		}
		list := []baseEntry{}
		for rows.Next() {
			var e baseEntry
			var folded string
			if err := rows.Scan(&e.ID, &e.TenantID, &e.ProjectID, &e.TargetType, &e.TargetID, &e.TargetName, &folded,
				&e.SprintID, &e.CreatedBy, &e.DeletedBy, &e.DeletedDate); err != nil {
				rows.Close()
				h.fail(w, http.StatusInternalServerError)
				return
			}
			e.DeletedDate = e.DeletedDate.UTC()
			list = append(list, e)
		}
		if err := rows.Close(); err != nil {
			h.fail(w, http.StatusInternalServerError)
			return
		}
		total := int64(len(list))
		if len(list) == size {
			if err := h.db.QueryRowContext(ctx, baseTotalSQL, tenantID, q.Get("targetType"), pattern).Scan(&total); err != nil {
				h.fail(w, http.StatusInternalServerError)
				return
			}
		}
		data = map[string]any{"total": total, "list": list}
	default:
		h.fail(w, http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_ = json.NewEncoder(w).Encode(baseEnvelope{Code: "S", Msg: "Success", Data: data,
		Datetime: time.Now().UTC().Format(time.RFC3339), Ext: map[string]any{}})
}

var (
	baseOnce sync.Once
	baseDB   *sql.DB
)

// benchBaseline opens the baseline's pool: pgdriver, the server's pool
// size and connection parameters, the bench schema.
func benchBaseline(b *testing.B) baseline {
	benchServer(b)
	baseOnce.Do(func() {
		n := database.DefaultMaxOpenConns()
		baseDB = sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(benchDSN), pgdriver.WithConnParams(map[string]any{
			"search_path":                     benchSchema,
			"statement_timeout":               database.DefaultStatementTimeout.Milliseconds(),
			"max_parallel_workers_per_gather": int64(0),
		})))
		baseDB.SetMaxOpenConns(n)
		baseDB.SetMaxIdleConns(n)
	})
	return baseline{baseDB}
}

// captureHook records the statements bun runs.
type captureHook struct {
	mu      sync.Mutex
	queries []string
}

func (h *captureHook) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context { return ctx }

func (h *captureHook) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.queries = append(h.queries, e.Query)
}

// inline writes args into a baseline statement as pgdriver does.
func inline(query string, args ...any) string {
	for i := len(args); i >= 1; i-- {
		var lit string
		switch v := args[i-1].(type) {
		case string:
			lit = "'" + strings.ReplaceAll(v, "'", "''") + "'"
		default:
			lit = fmt.Sprint(v)
		}
		query = strings.ReplaceAll(query, "$"+strconv.Itoa(i), lit)
	}
	return query
}

// checkSame fails unless deskkit runs exactly want for target and both
// handlers answer the same body (but for the datetime).
func checkSame(b *testing.B, target string, want []string, deskkit, base *httptest.Server, client *http.Client) {
	b.Helper()
	hook := &captureHook{}
	srv, err := newBenchServer(benchAppDB.WithQueryHook(hook))
	if err != nil {
		b.Fatal(err)
	}
	hook.mu.Lock()
	hook.queries = nil // the services' check of their tables, at New
	hook.mu.Unlock()
	call(b, srv, "GET", target)
	if !slices.Equal(hook.queries, want) {
		b.Fatalf("deskkit's statements for %s changed; update the baseline's.\ngot:\n%s\nwant:\n%s",
			target, strings.Join(hook.queries, "\n"), strings.Join(want, "\n"))
	}
	var bodies [2]map[string]any
	for i, s := range []*httptest.Server{deskkit, base} {
		body, status := get(b, client, s.URL+target)
		if status != 200 {
			b.Fatalf("%s: %d %s", s.URL+target, status, body)
		}
		if err := json.Unmarshal(body, &bodies[i]); err != nil {
			b.Fatal(err)
		}
		delete(bodies[i], "datetime")
	}
	if !reflect.DeepEqual(bodies[0], bodies[1]) {
		b.Fatalf("answers differ:\ndeskkit  %v\nbaseline %v", bodies[0], bodies[1])
	}
}

func get(b *testing.B, client *http.Client, url string) ([]byte, int) {
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+benchToken)
	resp, err := client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		b.Fatal(err)
	}
	return body, resp.StatusCode
}

func BenchmarkVsBaseline(b *testing.B) {
	hash := func() string {
		sum := sha256.Sum256([]byte(benchToken))
		return hex.EncodeToString(sum[:])
	}
	ops := []struct {
		name   string
		target func(i int) string
		want   func() []string // deskkit's statements for target(0)
	}{
		{"rare-search", func(int) string {
			return "/api/v1/task/trash/search?targetType=TASK&targetName=" + benchRareTerm + "&pageNo=1&pageSize=10"
		}, func() []string {
			return []string{
				inline(baseTokenSQL, hash()),
				inline(basePageSQL, int64(1), "TASK", "%"+benchRareTerm+"%", 10),
				inline(baseTotalSQL, int64(1), "TASK", "%"+benchRareTerm+"%"),
			}
		}},
		{"count", func(i int) string {
			return fmt.Sprintf("/api/v1/task/trash/count?projectId=%d", i%benchProjects+1)
		}, func() []string {
			return []string{inline(baseTokenSQL, hash()), inline(baseCountSQL, int64(1), int64(1))}
		}},
	}
	for _, op := range ops {
		for _, c := range []int{1, 4} {
			b.Run(fmt.Sprintf("%s/c%d", op.name, c), func(b *testing.B) {
				srv, _ := benchServer(b)
				ds := httptest.NewServer(srv)
				defer ds.Close()
				bs := httptest.NewServer(benchBaseline(b))
				defer bs.Close()
				client := &http.Client{Transport: &http.Transport{MaxIdleConns: 4 * c, MaxIdleConnsPerHost: 2 * c}}
				defer client.CloseIdleConnections()
				checkSame(b, op.target(0), op.want(), ds, bs, client)
				lat := make([][2]timings, c)
				var next atomic.Int64
				var wg sync.WaitGroup
				b.ResetTimer()
				for w := range c {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for {
							i := int(next.Add(1) - 1)
							if i >= b.N {
								return
							}
							for k := range 2 {
								which := (i + k) % 2 // 0 deskkit, 1 baseline; who goes first alternates
								url := []string{ds.URL, bs.URL}[which] + op.target(i)
								start := time.Now()
								if body, status := get(b, client, url); status != 200 {
									b.Errorf("%s: %d %s", url, status, body)
									return
								}
								lat[w][which] = append(lat[w][which], time.Since(start))
							}
						}
					}()
				}
				wg.Wait()
				b.StopTimer()
				var all [2]timings
				for _, l := range lat {
					all[0] = append(all[0], l[0]...)
					all[1] = append(all[1], l[1]...)
				}
				reportRatio(b, all[0], all[1])
			})
		}
	}
}

// reportRatio reports the medians of deskkit (d) and the baseline (base),
// and deskkit's p50, p99 and mean as multiples of the baseline's.
func reportRatio(b *testing.B, d, base timings) {
	if len(d) == 0 || len(base) == 0 {
		return
	}
	slices.Sort(d)
	slices.Sort(base)
	q := func(ts timings, f float64) float64 { return float64(ts[int(f*float64(len(ts)-1))]) }
	mean := func(ts timings) float64 {
		var s time.Duration
		for _, t := range ts {
			s += t
		}
		return float64(s) / float64(len(ts))
	}
	b.ReportMetric(q(d, 0.5)/1e6, "deskkit-p50-ms")
	b.ReportMetric(q(base, 0.5)/1e6, "base-p50-ms")
	b.ReportMetric(q(d, 0.5)/q(base, 0.5), "p50-x")
	b.ReportMetric(q(d, 0.99)/q(base, 0.99), "p99-x")
	b.ReportMetric(mean(d)/mean(base), "mean-x")
}
