package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/internal/database"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/trash"
)

// pgbouncerVars are durableVars for a server whose -database-url goes
// through PgBouncer in transaction mode (pooled), migrating and listening
// on direct.
func pgbouncerVars(pooled, direct string) map[string]string {
	vars := durableVars(pooled)
	vars[envDBTransactionPool] = "true"
	vars[envDatabaseMigrateURL] = direct
	vars[envDatabaseListenURL] = direct
	return vars
}

// TestDatabaseFlagsChecked: each bad combination of the database flags is
// refused before anything opens, naming the flag and the rule.
func TestDatabaseFlagsChecked(t *testing.T) {
	pg := "postgres://postgres@127.0.0.1:1/x?sslmode=disable"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-database-url", pg, "-database-transaction-pooling"}, "-database-migrate-url: required with -database-transaction-pooling"},
		{[]string{"-database-url", "sqlite:x.db", "-database-transaction-pooling"}, "-database-transaction-pooling: only for PostgreSQL"},
		{[]string{"-database-url", "sqlite:x.db", "-database-listen-url", pg}, "-database-listen-url: only for PostgreSQL"},
		{[]string{"-database-url", "sqlite:x.db", "-database-migrate-url", pg}, "-database-migrate-url: only for PostgreSQL"},
		{[]string{"-database-url", pg, "-database-listen-url", "mysql://x"}, "-database-listen-url: must be a postgres:// URL"},
		{[]string{"-database-url", pg, "-database-transaction-pooling", "-database-migrate-url", "sqlite:x.db"}, "-database-migrate-url: must be a postgres:// URL"},
		{[]string{"-database-url", "postgres://u@h1,h2/x?target_session_attrs=standby"}, "-database-url: database URL: target_session_attrs"},
		{[]string{"-database-url", "host=h1,h2 port=1,2,3 dbname=x"}, "-database-url: database connection string: port"},
		{[]string{"-database-url", pg, "-database-listen-url", "postgres://u@h1:99999/x"}, "-database-listen-url: database URL: host"},
	} {
		var stderr bytes.Buffer
		err := run(context.Background(), append([]string{"serve"}, tc.args...), &bytes.Buffer{}, &stderr, env(nil))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error with %q", tc.args, err, tc.want)
		}
	}
}

// pooledApp is the server's app over a fresh database reached through a
// real PgBouncer in transaction mode, with -database-transaction-pooling,
// migrated and listening on the direct URL, as serve wires them.
type pooledApp struct {
	app            *app
	db, listen     *bun.DB
	direct, pooled string
	admin          string
	adminP         deskkit.Principal
}

func newPooledApp(tb testing.TB, o database.Options) *pooledApp {
	tb.Helper()
	direct := dbtest.Database(tb)
	pooled := dbtest.PgBouncer(tb, direct)
	o.TransactionPooling = true
	cfg := serveConfig{databaseURL: pooled, migrateURL: direct, listenURL: direct, db: o}
	if err := checkDatabaseURLs(cfg); err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	db, err := openServeDB(ctx, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	listen := database.OpenPostgres(direct, database.Options{MaxOpenConns: 2})
	tb.Cleanup(func() { listen.Close() })
	a, err := newApp(db, appConfig{Logger: slog.New(slog.DiscardHandler), PlainStatements: true, ListenDB: listen,
		Verify: verifyConfig{secret: []byte("0123456789abcdef0123456789abcdef-pgbouncer")}, Channel: channelConfig{allowPrivate: true}})
	if err != nil {
		tb.Fatal(err)
	}
	p := &pooledApp{app: a, db: db, listen: listen, direct: direct, pooled: pooled}
	if p.admin, err = a.demoToken(ctx); err != nil {
		tb.Fatal(err)
	}
	if p.adminP, err = a.dir.Authenticate(ctx, p.admin); err != nil {
		tb.Fatal(err)
	}
	return p
}

// TestPgBouncerEveryRoute runs the reference server's app through a real
// PgBouncer in transaction mode: the demo's task flow (create, delete,
// search, restore), a channel with a published event delivered by the
// running workers, and then every route of the API, each with the ids of
// what exists: none may answer 5xx (a statement that needs a session, or
// a prepared one, fails through the pooler).
func TestPgBouncerEveryRoute(t *testing.T) {
	p := newPooledApp(t, database.Options{MaxOpenConns: 8})
	f := &fixture{t: t, db: p.db, app: p.app, clock: &clock{now: time.Now()}, admin: p.admin, adminP: p.adminP}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runs := make(chan struct{}, 2)
	go func() { _ = f.app.channels.Run(ctx); runs <- struct{}{} }()
	go func() { _ = f.app.verify.Run(ctx); runs <- struct{}{} }()
	defer func() { cancel(); <-runs; <-runs }()

	sprint := f.createSprint(1, "Sprint 1")
	task := f.createTask(1, &sprint, "Write the Release notes")
	d := f.delete("task", task)
	if page := f.search("targetType=TASK&targetName=release"); page.Total != 1 || page.List[0].ID != d.TrashID {
		t.Fatalf("search through PgBouncer: %+v", page)
	}
	f.ok(f.admin, http.MethodPatch, fmt.Sprintf("/api/v1/task/trash/%d/back", d.TrashID), nil, nil)
	if !f.visible("task", task) {
		t.Error("restored task not visible")
	}
	d = f.delete("task", task) // in the trash again, for the routes below

	arrived := make(chan struct{}, 1)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNoContent)
		select {
		case arrived <- struct{}{}:
		default:
		}
	}))
	defer recv.Close()
	var ch struct {
		ID int64 `json:"id"`
	}
	f.ok(f.admin, http.MethodPost, "/api/v1/event/channel", map[string]any{"channelType": "WEBHOOK", "name": "sink", "address": recv.URL + "/hook"}, &ch)
	f.ok(f.admin, http.MethodPost, "/api/v1/demo/event/publish", map[string]any{"type": "demo.hello", "title": "Hello"}, nil)
	select {
	case <-arrived:
	case <-time.After(time.Minute):
		t.Fatal("the published event did not reach the receiver through PgBouncer within a minute")
	}

	param := regexp.MustCompile(`\{[^}]+\}`)
	routes := f.app.api.Routes()
	if len(routes) < 20 {
		t.Fatalf("%d routes, want them all", len(routes))
	}
	for _, r := range routes {
		path := "/api/v1" + param.ReplaceAllStringFunc(r.Path, func(string) string {
			switch {
			case strings.Contains(r.Path, "/event/channel"):
				return fmt.Sprint(ch.ID)
			case strings.Contains(r.Path, "/trash"):
				return fmt.Sprint(d.TrashID)
			}
			return "1"
		})
		var body *strings.Reader
		if r.Method == http.MethodGet || r.Method == http.MethodDelete {
			body = strings.NewReader("")
		} else {
			body = strings.NewReader("{}")
		}
		req := httptest.NewRequest(r.Method, path, body)
		req.Header.Set("Authorization", "Bearer "+f.admin)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		f.app.handler.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Errorf("%s %s through PgBouncer: %d %s", r.Method, path, rec.Code, rec.Body)
		}
	}
}

// pgbDrainEvents is how many events a drain publishes: 5 webhooks each,
// 20,000 deliveries.
const pgbDrainEvents = 4000

// drainOver publishes n events of demo.hello to the tenant's 5 webhooks
// through db and reg with Run stopped, then runs reg until the receiver
// counted them all (got, reset first), and returns the time from Run's
// start.
func drainOver(tb testing.TB, db *bun.DB, reg *channel.ChannelRegistry, tenant int64, n int, got *atomic.Int64, done chan struct{}, want *atomic.Int64) time.Duration {
	tb.Helper()
	ctx := context.Background()
	got.Store(0)
	want.Store(int64(5 * n))
	for i := range n {
		err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			return reg.Publish(ctx, tx, tenant, deskkit.Event{Type: trash.EventTaskTrashed, Title: "Task 7 was trashed",
				Data: map[string]any{"trashId": i, "resourceType": "task", "resourceId": i, "name": "Login page"}})
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
	runCtx, cancel := context.WithCancel(ctx)
	stopped := make(chan struct{})
	start := time.Now()
	go func() { _ = reg.Run(runCtx); close(stopped) }()
	defer func() { cancel(); <-stopped }()
	select {
	case <-done:
	case <-time.After(10 * time.Minute):
		tb.Fatalf("the receiver got %d of %d", got.Load(), want.Load())
	}
	return time.Since(start)
}

// drainRig is a receiver and a tenant with 5 webhooks to it, on p's
// database.
func drainRig(tb testing.TB, p *pooledApp) (tenant int64, got *atomic.Int64, done chan struct{}, want *atomic.Int64) {
	tb.Helper()
	got, want = &atomic.Int64{}, &atomic.Int64{}
	done = make(chan struct{}, 1)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNoContent)
		if got.Add(1) == want.Load() {
			done <- struct{}{}
		}
	}))
	tb.Cleanup(recv.Close)
	ctx := context.Background()
	for j := range 5 {
		if _, err := p.app.channels.Add(ctx, p.adminP, channel.Input{Type: "WEBHOOK", Name: fmt.Sprintf("hook %d", j), Address: recv.URL + fmt.Sprintf("/h%d", j)}); err != nil {
			tb.Fatal(err)
		}
	}
	return p.adminP.TenantID, got, done, want
}

// TestPgBouncerDrain drains 20,000 deliveries (4,000 events to 5
// webhooks) through PgBouncer in transaction mode: every one arrives, and
// every delivery ends SUCCEEDED. BenchmarkPgBouncerDrain gives its speed
// against a direct connection.
func TestPgBouncerDrain(t *testing.T) {
	if testing.Short() {
		t.Skip("drains 20,000 deliveries")
	}
	p := newPooledApp(t, database.Options{MaxOpenConns: 8})
	tenant, got, done, want := drainRig(t, p)
	took := drainOver(t, p.db, p.app.channels, tenant, pgbDrainEvents, got, done, want)
	t.Logf("20,000 deliveries through PgBouncer in %s", took.Round(time.Millisecond))
	var n int
	if err := p.listen.NewRaw("SELECT count(*) FROM deskkit_outbox_deliveries WHERE status = 'SUCCEEDED'").Scan(context.Background(), &n); err != nil {
		t.Fatal(err)
	}
	if n != 5*pgbDrainEvents {
		t.Errorf("%d deliveries SUCCEEDED, want %d", n, 5*pgbDrainEvents)
	}
}

// BenchmarkPgBouncerDrain drains 20,000 deliveries (4,000 events to 5
// webhooks) in every iteration twice over one database, in turn so that
// drift on a shared machine hits both alike: "direct", the server's
// registry on a direct pool; "pgbouncer", the same wiring through a real
// PgBouncer in transaction mode (-database-transaction-pooling, LISTEN on
// the direct URL). Both pools have 8 connections; PgBouncer has
// dbtest.PgBouncerPoolSize to PostgreSQL. It reports each one's
// deliveries/s and pgbouncer/direct (the goal: at least 0.8).
func BenchmarkPgBouncerDrain(b *testing.B) {
	p := newPooledApp(b, database.Options{MaxOpenConns: 8})
	tenant, got, done, want := drainRig(b, p)
	ddb := database.OpenPostgres(p.direct, database.Options{MaxOpenConns: 8})
	defer ddb.Close()
	direct, err := newApp(ddb, appConfig{Logger: slog.New(slog.DiscardHandler),
		Verify: verifyConfig{secret: []byte("0123456789abcdef0123456789abcdef-pgbouncer")}, Channel: channelConfig{allowPrivate: true}})
	if err != nil {
		b.Fatal(err)
	}
	drainOver(b, ddb, direct.channels, tenant, 200, got, done, want) // warm both
	drainOver(b, p.db, p.app.channels, tenant, 200, got, done, want)
	var wallDirect, wallPooled time.Duration
	b.ResetTimer()
	for b.Loop() {
		wallDirect += drainOver(b, ddb, direct.channels, tenant, pgbDrainEvents, got, done, want)
		wallPooled += drainOver(b, p.db, p.app.channels, tenant, pgbDrainEvents, got, done, want)
	}
	per := func(d time.Duration) float64 { return float64(b.N*5*pgbDrainEvents) / d.Seconds() }
	b.ReportMetric(per(wallDirect), "direct-deliveries/s")
	b.ReportMetric(per(wallPooled), "pgbouncer-deliveries/s")
	b.ReportMetric(per(wallPooled)/per(wallDirect), "pgbouncer/direct")
}

// TestDurableKill9PgBouncer is TestDurableKill9 with the server's
// database through a real PgBouncer in transaction mode
// (-database-transaction-pooling, migrating and listening directly).
func TestDurableKill9PgBouncer(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the lease of the deliveries in flight at the kill (over a minute)")
	}
	rawURL := dbtest.Database(t)
	durableKill9(t, rawURL, pgbouncerVars(dbtest.PgBouncer(t, rawURL), rawURL))
}

// TestDurableDatabaseCutPgBouncer is TestDurableDatabaseCut through a
// real PgBouncer in transaction mode: the cut proxy stands between
// PgBouncer and PostgreSQL, and carries the direct connections (the
// migrations', the listener's) too, so the whole database goes away.
func TestDurableDatabaseCutPgBouncer(t *testing.T) {
	if testing.Short() {
		t.Skip("cuts the database for 10 s and may wait for leases (over a minute)")
	}
	durableDatabaseCut(t, dbtest.Database(t), func(proxied string) map[string]string {
		return pgbouncerVars(dbtest.PgBouncer(t, proxied), proxied)
	})
}
