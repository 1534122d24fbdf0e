package httpapi

import (
	"context"
	crand "crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/database"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/trash"
)

// The benchmarks measure the trash through the HTTP handler on PostgreSQL
// with 1,000,000 entries in one tenant over 1,000 projects, in a schema
// deskkit_bench that is loaded once and kept between runs:
//
//	DESKKIT_BENCH_DATABASE_URL='postgres://postgres@127.0.0.1:5432/test?sslmode=disable' \
//	    go test ./httpapi -run '^$' -bench . -benchtime 200x
//
// Names: "Task <n> <verb>", plus " alpha" in every tenth (100,000 entries)
// and " zephyrine" in every ten-thousandth (100 entries). Every twentieth
// entry is a sprint. Projects 5001 (100,000 entries) and 5002 (10,000) are
// reloaded (and vacuumed, as autovacuum would) before each clear-all and
// restore-all.
const (
	benchEntries   = 1_000_000
	benchProjects  = 1_000
	benchClearProj = 5001
	benchClearSize = 100_000
	benchRestProj  = 5002
	benchRestSize  = 10_000
	benchSchema    = "deskkit_bench"
)

// benchHost is a realistic host: its tasks live in bench_tasks, and batches
// restore or purge them with one statement each.
type benchHost struct{}

func (benchHost) Restore(ctx context.Context, tx bun.Tx, e trash.Entry) error {
	return benchHost{}.RestoreBatch(ctx, tx, []trash.Entry{e})
}

func (benchHost) Purge(ctx context.Context, tx bun.Tx, e trash.Entry) error {
	return benchHost{}.PurgeBatch(ctx, tx, []trash.Entry{e})
}

func (benchHost) RestoreBatch(ctx context.Context, tx bun.Tx, es []trash.Entry) error {
	_, err := tx.NewUpdate().Table("bench_tasks").Set("state = 'active'").Where("id IN (?)", bun.List(targetIDs(es))).Exec(ctx)
	return err
}

func (benchHost) PurgeBatch(ctx context.Context, tx bun.Tx, es []trash.Entry) error {
	_, err := tx.NewDelete().Table("bench_tasks").Where("id IN (?)", bun.List(targetIDs(es))).Exec(ctx)
	return err
}

func targetIDs(es []trash.Entry) []int64 {
	ids := make([]int64, len(es))
	for i, e := range es {
		ids[i] = e.TargetID
	}
	return ids
}

var (
	benchOnce sync.Once
	benchDB   *bun.DB
	benchSrv  *Server
	benchErr  error
	// benchToken is the bench admin's bearer token: every request is
	// authenticated by benchTokens, a token lookup in PostgreSQL, as the
	// reference server's user directory does.
	benchToken string
	benchDSN   string
	benchAppDB *bun.DB // the server's pool
)

// benchServer returns the server and the loader's database handle.
func benchServer(b *testing.B) (*Server, *bun.DB) {
	b.Helper()
	dsn := os.Getenv("DESKKIT_BENCH_DATABASE_URL")
	if dsn == "" {
		b.Skip("set DESKKIT_BENCH_DATABASE_URL to a PostgreSQL DSN to run the trash benchmarks")
	}
	benchOnce.Do(func() { benchDSN = dsn; benchSrv, benchDB, benchErr = loadBench(dsn) })
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchSrv, benchDB
}

func loadBench(dsn string) (*Server, *bun.DB, error) {
	ctx := context.Background()
	admin := database.OpenPostgres(dsn, database.Options{MaxOpenConns: 2})
	defer admin.Close()
	for _, q := range []string{
		"CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public",
		"CREATE SCHEMA IF NOT EXISTS " + benchSchema,
	} {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			return nil, nil, err
		}
	}
	// The loader's statements (a million rows, VACUUM) run for minutes:
	// it gets a connection of its own with a long statement timeout, kept
	// for loadProject; the server gets the default pool.
	loader := dbtest.OpenSchema(dsn, benchSchema, pgdriver.WithReadTimeout(30*time.Minute),
		pgdriver.WithConnParams(map[string]any{"statement_timeout": (30 * time.Minute).Milliseconds()}))
	// Two connections: migrate.Run holds its advisory lock on one and
	// migrates on another, so a pool of one would wait for ever.
	loader.SetMaxOpenConns(2)
	if err := trash.Migrate(ctx, loader); err != nil {
		return nil, nil, err
	}
	for _, q := range []string{
		"CREATE TABLE IF NOT EXISTS bench_meta (entries BIGINT NOT NULL)",
		"CREATE TABLE IF NOT EXISTS bench_tasks (id BIGINT PRIMARY KEY, state TEXT NOT NULL)",
		"CREATE TABLE IF NOT EXISTS bench_users (id BIGINT PRIMARY KEY, tenant_id BIGINT NOT NULL, admin BOOLEAN NOT NULL)",
		"CREATE TABLE IF NOT EXISTS bench_tokens (token_hash VARCHAR(64) PRIMARY KEY, user_id BIGINT NOT NULL, tenant_id BIGINT NOT NULL, expires_at TIMESTAMPTZ)",
	} {
		if _, err := loader.ExecContext(ctx, q); err != nil {
			return nil, nil, err
		}
	}
	var loaded int64
	_ = loader.NewSelect().Table("bench_meta").ColumnExpr("coalesce(max(entries), 0)").Scan(ctx, &loaded)
	if loaded != benchEntries {
		start := time.Now()
		for _, q := range []string{
			"TRUNCATE deskkit_trash, bench_meta, bench_tasks",
			fmt.Sprintf(`INSERT INTO deskkit_trash (tenant_id, project_id, target_type, target_id, target_name, target_name_folded, sprint_id, created_by, deleted_by, deleted_date)
SELECT 1, i %% %d + 1, CASE WHEN i %% 20 = 0 THEN 'TASK_SPRINT' ELSE 'TASK' END, i, n.name, lower(n.name), NULL, i %% 50 + 1, i %% 37 + 1,
       timestamptz '2026-01-01 00:00:00+00' + i * interval '10 seconds'
FROM generate_series(1, %d) AS i,
LATERAL (SELECT 'Task ' || i || ' ' || (ARRAY['design','review','deploy','fix','write','test','plan'])[i %% 7 + 1]
        || CASE WHEN i %% 10 = 3 THEN ' alpha' ELSE '' END
        || CASE WHEN i %% 10000 = 7 THEN ' zephyrine' ELSE '' END AS name) AS n`, benchProjects, benchEntries),
			fmt.Sprintf("INSERT INTO bench_meta VALUES (%d)", benchEntries),
			"VACUUM ANALYZE deskkit_trash",
		} {
			if _, err := loader.ExecContext(ctx, q); err != nil {
				return nil, nil, fmt.Errorf("load: %w", err)
			}
		}
		fmt.Fprintf(os.Stderr, "loaded %d entries in %s\n", benchEntries, time.Since(start).Round(time.Second))
	}
	// The server's pool is the default one: bounded, with the default
	// statement timeout, as the reference server opens it.
	db := dbtest.OpenSchema(dsn, benchSchema)
	db.SetMaxOpenConns(database.DefaultMaxOpenConns())
	db.SetMaxIdleConns(database.DefaultMaxOpenConns())
	benchAppDB = db
	// The entries are tenant 1's, and so is the bench admin, user 1. Each
	// run issues a fresh token, after revoking the last run's.
	var raw [32]byte
	if _, err := crand.Read(raw[:]); err != nil {
		return nil, nil, err
	}
	benchToken = "bench_" + hex.EncodeToString(raw[:])
	for _, q := range []string{
		"INSERT INTO bench_users (id, tenant_id, admin) VALUES (1, 1, TRUE) ON CONFLICT (id) DO NOTHING",
		"DELETE FROM bench_tokens WHERE user_id = 1",
		"INSERT INTO bench_tokens (token_hash, user_id, tenant_id) VALUES ('" + tokenHash(benchToken) + "', 1, 1)",
	} {
		if _, err := loader.ExecContext(ctx, q); err != nil {
			return nil, nil, err
		}
	}
	srv, err := newBenchServer(db)
	return srv, loader, err
}

// newBenchServer is the server over db: the trash, authenticated by
// benchTokens.
func newBenchServer(db *bun.DB) (*Server, error) {
	tr, err := trash.New(db, benchHost{}, &trash.Config{BatchSize: 1000})
	if err != nil {
		return nil, err
	}
	return New(&Config{Authenticator: benchTokens{db}, Trash: tr})
}

// benchTokenSQL is benchTokens' statement: the token by its hash, and its
// user's current admin flag, the one indexed lookup the reference server's
// user directory makes on every request.
const benchTokenSQL = `SELECT u.id, u.tenant_id, u.admin, k.token_hash, k.expires_at FROM bench_tokens AS k ` +
	`JOIN bench_users AS u ON u.id = k.user_id AND u.tenant_id = k.tenant_id WHERE k.token_hash = ? LIMIT 1`

// tokenHash is the form in which bench_tokens keeps a token: its SHA-256
// in hex.
func tokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// benchTokens is the bench host's Authenticator. It does what the
// reference server's user directory does for each request (one query on
// the pool), so that the benchmarks measure the same work they did when
// they authenticated through it.
type benchTokens struct{ db *bun.DB }

func (a benchTokens) Authenticate(ctx context.Context, token string) (deskkit.Principal, error) {
	want := tokenHash(token)
	var (
		userID, tenantID int64
		admin            bool
		hash             string
		expiresAt        bun.NullTime
	)
	err := a.db.QueryRowContext(ctx, benchTokenSQL, want).Scan(&userID, &tenantID, &admin, &hash, &expiresAt)
	if errors.Is(err, sql.ErrNoRows) {
		return deskkit.Principal{}, deskkit.ErrUnauthenticated
	}
	if err != nil {
		return deskkit.Principal{}, err
	}
	if subtle.ConstantTimeCompare([]byte(hash), []byte(want)) != 1 || (!expiresAt.IsZero() && !time.Now().Before(expiresAt.Time)) {
		return deskkit.Principal{}, deskkit.ErrUnauthenticated
	}
	return deskkit.Principal{UserID: userID, TenantID: tenantID, Admin: admin}, nil
}

var _ Authenticator = benchTokens{}

// loadProject refills project with n trashed tasks backed by host rows.
func loadProject(b *testing.B, db *bun.DB, project int64, n int) {
	b.Helper()
	ctx := context.Background()
	base := project * 10_000_000
	for _, q := range []string{
		fmt.Sprintf("DELETE FROM deskkit_trash WHERE tenant_id = 1 AND project_id = %d", project),
		fmt.Sprintf("DELETE FROM bench_tasks WHERE id > %d AND id <= %d", base, base+int64(n)),
		fmt.Sprintf(`INSERT INTO deskkit_trash (tenant_id, project_id, target_type, target_id, target_name, target_name_folded, sprint_id, created_by, deleted_by, deleted_date)
SELECT 1, %d, 'TASK', %d + i, 'Bulk ' || i, 'bulk ' || i, NULL, 1, 1, now() FROM generate_series(1, %d) AS i`, project, base, n),
		fmt.Sprintf("INSERT INTO bench_tasks SELECT %d + i, 'trashed' FROM generate_series(1, %d) AS i", base, n),
		// What autovacuum does after such churn in production; this
		// machine's server runs with autovacuum off.
		"VACUUM ANALYZE deskkit_trash",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
}

// call runs one request through the handler and fails on a non-200.
func call(b testing.TB, srv *Server, method, target string) {
	req := httptest.NewRequest(method, target, nil)
	req.Header.Set("Authorization", "Bearer "+benchToken)
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	if rec.Code != 200 {
		b.Fatalf("%s %s: %d %s", method, target, rec.Code, rec.Body)
	}
}

// timings collects per-operation latencies and reports their median, p95 and max.
type timings []time.Duration

func (ts timings) report(b *testing.B, prefix string) {
	if len(ts) == 0 {
		return
	}
	s := slices.Clone(ts)
	slices.Sort(s)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(s[len(s)/2]), prefix+"p50-ms")
	b.ReportMetric(ms(s[len(s)*95/100]), prefix+"p95-ms")
	b.ReportMetric(ms(s[len(s)-1]), prefix+"max-ms")
}

func benchRequest(b *testing.B, method string, target func(i int) string) {
	srv, _ := benchServer(b)
	call(b, srv, method, target(0)) // warm the connection pool and caches
	ts := make(timings, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		call(b, srv, method, target(i))
		ts = append(ts, time.Since(start))
	}
	b.StopTimer()
	ts.report(b, "")
}

func BenchmarkSearchRareName(b *testing.B) {
	benchRequest(b, "GET", func(int) string {
		return "/api/v1/task/trash/search?targetType=TASK&targetName=zephyr&pageNo=1&pageSize=10"
	})
}

func BenchmarkSearchCommonName(b *testing.B) {
	benchRequest(b, "GET", func(int) string {
		return "/api/v1/task/trash/search?targetType=TASK&targetName=alpha&pageNo=1&pageSize=10"
	})
}

func BenchmarkCountProject(b *testing.B) {
	benchRequest(b, "GET", func(i int) string { return fmt.Sprintf("/api/v1/task/trash/count?projectId=%d", i%benchProjects+1) })
}

func BenchmarkSearchDeepPage(b *testing.B) {
	benchRequest(b, "GET", func(int) string {
		return "/api/v1/task/trash/search?targetType=TASK&orderBy=id&pageNo=1000&pageSize=100"
	})
}

// BenchmarkClearAll100k clears a project of 100,000 entries while a client
// searches other projects; it reports the clear's time and the concurrent
// searches' latencies (search-p50-ms, ...).
func BenchmarkClearAll100k(b *testing.B) {
	srv, db := benchServer(b)
	var all, searches timings
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		loadProject(b, db, benchClearProj, benchClearSize)
		b.StartTimer()
		done := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 1))
			for {
				select {
				case <-done:
					return
				default:
				}
				start := time.Now()
				call(b, srv, "GET", fmt.Sprintf("/api/v1/task/trash/search?targetType=TASK&projectId=%d&pageSize=10", rng.IntN(benchProjects)+1))
				searches = append(searches, time.Since(start))
			}
		}()
		start := time.Now()
		call(b, srv, "DELETE", fmt.Sprintf("/api/v1/task/trash?projectId=%d", benchClearProj))
		all = append(all, time.Since(start))
		close(done)
		wg.Wait()
	}
	b.StopTimer()
	all.report(b, "clear-")
	searches.report(b, "search-")
	b.ReportMetric(float64(len(searches)), "searches")
}

func BenchmarkRestoreAll10k(b *testing.B) {
	srv, db := benchServer(b)
	var all timings
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		loadProject(b, db, benchRestProj, benchRestSize)
		b.StartTimer()
		start := time.Now()
		call(b, srv, "PATCH", fmt.Sprintf("/api/v1/task/trash/back?projectId=%d", benchRestProj))
		all = append(all, time.Since(start))
	}
	b.StopTimer()
	all.report(b, "restore-")
}
