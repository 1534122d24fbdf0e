package outbox

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/clocktest"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// holdingReceiver is a loopback HTTP server that counts the requests it
// holds at once and holds each until the test opens the gate it arrived
// under.
type holdingReceiver struct {
	srv *httptest.Server

	mu      sync.Mutex
	gate    chan struct{}
	held    int
	maxHeld int
	arrived int
}

func newHoldingReceiver(t *testing.T) *holdingReceiver {
	t.Helper()
	r := &holdingReceiver{gate: make(chan struct{})}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		gate := r.gate
		r.held++
		r.arrived++
		r.maxHeld = max(r.maxHeld, r.held)
		r.mu.Unlock()
		select {
		case <-gate:
		case <-req.Context().Done():
		}
		r.mu.Lock()
		r.held--
		r.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(func() {
		r.open()
		r.srv.Close()
	})
	return r
}

// state is how many requests the receiver holds, the most it held at
// once, and how many arrived.
func (r *holdingReceiver) state() (held, maxHeld, arrived int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.held, r.maxHeld, r.arrived
}

// open lets the requests held go, and holds the next ones under a new
// gate.
func (r *holdingReceiver) open() {
	r.mu.Lock()
	defer r.mu.Unlock()
	close(r.gate)
	r.gate = make(chan struct{})
}

// poster is a handler whose attempts POST the event's id to a URL, with
// a client of its own.
type poster struct {
	url    string
	client *http.Client
}

func (p poster) Open(ctx context.Context, batch []Delivery) (func(context.Context, Delivery) Outcome, error) {
	return func(ctx context.Context, d Delivery) Outcome {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, strings.NewReader(d.Event.ID))
		if err != nil {
			return Outcome{Error: deskkit.Plain(err.Error())}
		}
		resp, err := p.client.Do(req)
		if err != nil {
			return Outcome{Error: deskkit.Plain(err.Error())}
		}
		resp.Body.Close()
		return Outcome{OK: resp.StatusCode/100 == 2, StatusCode: resp.StatusCode}
	}, nil
}

func (p poster) Recorded(context.Context, bun.Tx, []Result) error { return nil }

// replicaPools returns n pools over db's schema, each of its own (on
// PostgreSQL, two connections each), as n replicas have; on SQLite (one
// process) db itself n times.
func replicaPools(t *testing.T, db *bun.DB, n int) []*bun.DB {
	t.Helper()
	pools := make([]*bun.DB, n)
	if !isPostgres(db) {
		for i := range pools {
			pools[i] = db
		}
		return pools
	}
	var schema string
	if err := db.NewRaw("SELECT current_schema()").Scan(context.Background(), &schema); err != nil {
		t.Fatal(err)
	}
	dsn := dbtest.RequirePostgres(t)
	for i := range pools {
		p := dbtest.OpenSchema(dsn, schema)
		p.SetMaxOpenConns(2)
		t.Cleanup(func() { p.Close() })
		pools[i] = p
	}
	return pools
}

// TestTargetInFlightAcrossReplicas: three workers on one database (three
// replicas, each with its pool) claim at the same instant, round after
// round, from one target with a long backlog, for a receiver that holds
// every request until all the claims of the round have ended: the
// receiver never holds more than TargetInFlight at once. Each round waits
// until every worker's claim has either returned empty or committed and
// its deliveries all reached the receiver, then lets them go; the round's
// RunOnce calls record the outcomes before the next round starts.
func TestTargetInFlightAcrossReplicas(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		const (
			replicas = 3
			limit    = 3
			n        = 30
		)
		ctx := context.Background()
		migrated(t, db)
		clock := clocktest.New(t0)
		for i := range n {
			enqueue(t, db, event(fmt.Sprintf("msg_%02d", i)), clock.Now(), 7)
		}
		rcv := newHoldingReceiver(t)
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
		t.Cleanup(client.CloseIdleConnections)
		h := poster{rcv.srv.URL, client}
		var workers []*Worker
		for _, p := range replicaPools(t, db, replicas) {
			workers = append(workers, fairWorker(t, p, h, clock, Config{Concurrency: 8, TargetInFlight: limit, TargetInFlightMax: limit}))
		}
		// leases is how many deliveries are leased, and under how many
		// claims' tokens.
		leases := func() (rows, claims int) {
			t.Helper()
			err := db.NewSelect().Table("deskkit_outbox_deliveries").
				ColumnExpr("count(*), count(DISTINCT lease_token)").
				Where("lease_token IS NOT NULL").Scan(ctx, &rows, &claims)
			if err != nil {
				t.Fatal(err)
			}
			return rows, claims
		}
		for round := 0; ; round++ {
			if round > n {
				t.Fatalf("%d rounds and the backlog is not drained", round)
			}
			var returned atomic.Int64
			var wg sync.WaitGroup
			var claimed atomic.Int64
			start := make(chan struct{})
			for _, w := range workers {
				wg.Go(func() {
					<-start
					k, err := w.RunOnce(ctx)
					if err != nil {
						t.Error(err)
					}
					claimed.Add(int64(k))
					returned.Add(1)
				})
			}
			close(start)
			// Every worker has either returned (its claim took nothing)
			// or holds a committed claim, and every leased delivery has
			// reached the receiver.
			guard := time.Now()
			for {
				rows, claims := leases()
				held, _, _ := rcv.state()
				if int(returned.Load())+claims == replicas && held == rows {
					break
				}
				if time.Since(guard) > time.Minute {
					t.Fatalf("round %d does not settle: %d returned, %d claims of %d leases, %d held", round, returned.Load(), claims, rows, held)
				}
				runtime.Gosched()
			}
			rcv.open()
			wg.Wait()
			if claimed.Load() == 0 {
				break
			}
		}
		_, maxHeld, arrived := rcv.state()
		t.Logf("most requests held at once: %d (cap %d, %d replicas)", maxHeld, limit, replicas)
		if maxHeld > limit {
			t.Errorf("the receiver held %d requests of one target at once; the cap is %d", maxHeld, limit)
		}
		var left int
		if err := db.NewSelect().Table("deskkit_outbox_deliveries").ColumnExpr("count(*)").
			Where("status <> ?", Succeeded).Scan(ctx, &left); err != nil {
			t.Fatal(err)
		}
		if arrived != n || left != 0 {
			t.Errorf("%d requests arrived and %d deliveries did not succeed; want %d and 0", arrived, left, n)
		}
	})
}
