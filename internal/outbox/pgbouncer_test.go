package outbox

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/deskkit/deskkit/internal/database"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// lockedBuffer is a log's buffer that goroutines write at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestWorkerThroughPgBouncer runs a worker with PlainStatements on a pool
// opened with TransactionPooling through a real PgBouncer in transaction
// mode (whose pool refuses to prepare), and its Listen on a direct pool:
// a backlog enqueued through PgBouncer is delivered, each delivery once,
// a commit through PgBouncer wakes the worker through the direct
// listener, and nothing is logged (no preparation tried and failed, no
// flush lost).
func TestWorkerThroughPgBouncer(t *testing.T) {
	direct := dbtest.Database(t)
	pooledURL := dbtest.PgBouncer(t, direct)
	ctx := context.Background()
	ddb := database.OpenPostgres(direct, database.Options{MaxOpenConns: 2})
	defer ddb.Close()
	if err := Migrate(ctx, ddb); err != nil {
		t.Fatal(err)
	}
	db := database.OpenPostgres(pooledURL, database.Options{MaxOpenConns: 8, TransactionPooling: true})
	defer db.Close()
	var logs lockedBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	s := newScript()
	w, err := NewWorker(db, Config{Kind: "test", Handler: s, Lease: 30 * time.Second, Schedule: []time.Duration{0, time.Second},
		TenantSlots: DefaultConcurrency, TargetInFlight: DefaultConcurrency, Poll: time.Hour, Logger: logger, PlainStatements: true})
	if err != nil {
		t.Fatal(err)
	}
	const n = 300
	for i := range n {
		enqueue(t, db, event(fmt.Sprintf("msg_%d", i)), time.Now(), int64(1+i%5))
	}
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { Listen(runCtx, ddb, logger, w) })
	wg.Go(func() { w.Run(runCtx) })
	defer func() { cancel(); wg.Wait() }()
	pending := func() int {
		n, err := db.NewSelect().Table("deskkit_outbox_deliveries").Where("status <> ?", Succeeded).Count(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 30 s (%d attempts, %d not delivered); log:\n%s", what, s.total(), pending(), logs.String())
			}
			select {
			case <-time.After(5 * time.Millisecond):
			case <-runCtx.Done():
			}
		}
	}
	waitFor("the backlog delivered", func() bool { return pending() == 0 })
	waitFor("the listener listening", w.Listening)
	// With the LISTEN holding, the worker makes no quick polls and its
	// poll is an hour away: only the NOTIFY of a commit through PgBouncer,
	// heard on the direct connection, gets this one delivered.
	enqueue(t, db, event("msg_late"), time.Now(), 9)
	waitFor("the late event delivered", func() bool { return pending() == 0 && s.total() == n+1 })
	if got := s.total(); got != n+1 {
		t.Errorf("%d attempts, want %d", got, n+1)
	}
	s.mu.Lock()
	for id, c := range s.attempts {
		if c != 1 {
			t.Errorf("delivery %d attempted %d times", id, c)
		}
	}
	s.mu.Unlock()
	if w.claimStmt.Load() != nil || w.recordStmt.Load() != nil {
		t.Error("a statement was prepared")
	}
	if out := logs.String(); bytes.Contains([]byte(out), []byte("level=WARN")) || bytes.Contains([]byte(out), []byte("level=ERROR")) {
		t.Errorf("the worker logged trouble:\n%s", out)
	}
}
