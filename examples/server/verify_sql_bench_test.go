package main

import (
	"context"
	"database/sql"
	"errors"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/deskkit/deskkit/internal/cputime"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// Verification against its SQL: BenchmarkSendCheckVsSQL* first run send +
// check round trips of benchSendCheck through the reference server,
// recording every statement each user's requests ran (a bun query hook,
// BEGIN and COMMIT included). Then, in twenty chunks, they time the server
// doing more such round trips, and the replay of a twentieth of the
// recorded ones: their statements, in order, from as many goroutines as
// there were users, each on a connection of its own opened with pgdriver
// through database/sql, which is what a pgbench script of the same
// statements does, without HTTP, JSON, bun or the verify package. The one
// value the replay cannot take from the record is the id of a code row,
// which the sequence gives anew: as pgbench's \gset would, the replay reads
// it from the RETURNING of the statement that writes the row and writes it
// into the statements that follow. The verification tables are emptied
// before each timed part, and which part goes first alternates, so that
// both meet the same tables and the same load of a shared machine.
//
// vs-sql-x is the server's round trips per second over the replay's, over
// all chunks; vs-sql-x-median is the median of that ratio over pairs of
// neighbouring chunks, which a burst of another process's load during a
// few chunks moves less. The process's CPU time is taken around each part
// too: cpu-us/roundtrip (the server's, the benchmark's HTTP client
// included) and sql-cpu-us/roundtrip (the replay's database/sql and
// driver) vary less with the machine's load than the times do, and their
// difference is what deskkit costs beyond its statements.
//
//	DESKKIT_TEST_DATABASE_URL=... go test ./examples/server -run '^$' -bench VsSQL -benchtime 1000x -count 3

// stmt is one statement as a request ran it.
type stmt struct {
	query  string
	failed bool
}

// stmtLog is a bun query hook that records, while on, per benchmark user
// (the benchUser context value) and round trip, the statements run on the
// user's behalf.
type stmtLog struct {
	on       atomic.Bool
	mu       sync.Mutex
	byUser   map[int][][]stmt
	untagged int // statements without a user: run outside any request
}

func (l *stmtLog) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context { return ctx }

func (l *stmtLog) AfterQuery(ctx context.Context, e *bun.QueryEvent) {
	if !l.on.Load() {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	u, ok := ctx.Value(benchUser{}).(int)
	if !ok {
		l.untagged++
		return
	}
	g := l.byUser[u]
	if len(g) == 0 {
		g = append(g, nil)
	}
	g[len(g)-1] = append(g[len(g)-1], stmt{e.Query, e.Err != nil && !errors.Is(e.Err, sql.ErrNoRows)})
	l.byUser[u] = g
}

// cut ends user's round trip.
func (l *stmtLog) cut(user int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.byUser[user] = append(l.byUser[user], nil)
}

// codeID is how the statements after a code row's write name it.
var codeID = regexp.MustCompile(`\bid = \d+ AND`)

// runUsers runs per calls of fn for each of users goroutines at once.
func runUsers(users, per int, fn func(user int) error) error {
	var wg sync.WaitGroup
	errs := make(chan error, users)
	for u := range users {
		wg.Go(func() {
			for range per {
				if err := fn(u); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func benchSendCheckVsSQL(b *testing.B, users int) {
	const chunks = 20
	per := max(1, b.N/(users*chunks)) // round trips per user and chunk
	log := &stmtLog{byUser: map[int][][]stmt{}}
	db, roundTrip := setupSendCheck(b, users, false, log)
	log.on.Store(true)
	err := runUsers(users, per*chunks, func(u int) error {
		err := roundTrip(u)
		log.cut(u)
		return err
	})
	log.on.Store(false)
	if err != nil {
		b.Fatal(err)
	}
	if log.untagged > 0 {
		// A statement outside the requests (a background activation)
		// would be left out of the replay, flattering the server.
		b.Fatalf("%d statements ran outside the benchmark's requests", log.untagged)
	}
	ctx := context.Background()
	var schema string
	if err := db.NewRaw("SELECT current_schema()").Scan(ctx, &schema); err != nil {
		b.Fatal(err)
	}
	var tables []string
	if err := db.NewRaw(`SELECT tablename FROM pg_tables WHERE schemaname = ? AND tablename LIKE 'deskkit\_verify\_%' AND tablename NOT LIKE '%migrations'`, schema).
		Scan(ctx, &tables); err != nil {
		b.Fatal(err)
	}
	empty := func() {
		if _, err := db.ExecContext(ctx, "TRUNCATE "+strings.Join(tables, ", ")+" RESTART IDENTITY"); err != nil {
			b.Fatal(err)
		}
	}
	dsn, err := dbtest.PostgresURL()
	if err != nil {
		b.Fatal(err)
	}
	sqldb := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(dsn), pgdriver.WithConnParams(map[string]any{"search_path": schema})))
	defer sqldb.Close()
	sqldb.SetMaxOpenConns(users)
	sqldb.SetMaxIdleConns(users)

	statements := 0
	for _, g := range log.byUser {
		for _, rt := range g[:per*chunks] {
			statements += len(rt)
		}
	}
	// A part's time and CPU time, in total and per chunk.
	type part struct {
		took, cpu time.Duration
		chunks    []time.Duration
		timer     bool // the benchmark's timer runs
	}
	server, replayed := &part{timer: true}, &part{}
	timed := func(fn func(u int) error, p *part) {
		empty()
		if p.timer {
			b.StartTimer() // ns/op is the server's time
			defer b.StopTimer()
		}
		start, startCPU := time.Now(), cputime.Process()
		if err := runUsers(users, 1, fn); err != nil {
			b.Fatal(err)
		}
		took := time.Since(start)
		p.took += took
		p.cpu += cputime.Process() - startCPU
		p.chunks = append(p.chunks, took)
	}
	b.ResetTimer()
	b.StopTimer()
	for j := range chunks {
		serve := func(u int) error {
			for range per {
				if err := roundTrip(u); err != nil {
					return err
				}
			}
			return nil
		}
		sqlChunk := func(u int) error {
			var stmts []stmt
			for _, rt := range log.byUser[u][j*per : (j+1)*per] {
				stmts = append(stmts, rt...)
			}
			return replay(ctx, sqldb, stmts)
		}
		if j%2 == 0 {
			timed(serve, server)
			timed(sqlChunk, replayed)
		} else {
			timed(sqlChunk, replayed)
			timed(serve, server)
		}
	}
	n := float64(per * users * chunks)
	b.ReportMetric(n/server.took.Seconds(), "roundtrips/s")
	b.ReportMetric(n/replayed.took.Seconds(), "sql-roundtrips/s")
	b.ReportMetric(replayed.took.Seconds()/server.took.Seconds(), "vs-sql-x")
	var pairs []float64
	for j := 0; j+1 < chunks; j += 2 {
		pairs = append(pairs, (replayed.chunks[j]+replayed.chunks[j+1]).Seconds()/(server.chunks[j]+server.chunks[j+1]).Seconds())
	}
	slices.Sort(pairs)
	b.ReportMetric((pairs[(len(pairs)-1)/2]+pairs[len(pairs)/2])/2, "vs-sql-x-median")
	b.ReportMetric(float64(statements)/n, "statements/roundtrip")
	b.ReportMetric(float64(server.cpu.Microseconds())/n, "cpu-us/roundtrip")
	b.ReportMetric(float64(replayed.cpu.Microseconds())/n, "sql-cpu-us/roundtrip")
}

// replay runs one user's statements on a connection of its own, reading
// every result as the server does.
func replay(ctx context.Context, db *sql.DB, stmts []stmt) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	id := ""
	for _, s := range stmts {
		q := s.query
		code := strings.Contains(q, "deskkit_verify_codes")
		if code && id != "" {
			q = codeID.ReplaceAllString(q, "id = "+id+" AND")
		}
		rows, err := conn.QueryContext(ctx, q)
		if err == nil {
			for rows.Next() {
				var first any
				cols, _ := rows.Columns()
				dest := make([]any, len(cols))
				dest[0] = &first
				for i := 1; i < len(dest); i++ {
					dest[i] = new(any)
				}
				if err = rows.Scan(dest...); err != nil {
					break
				}
				if code && strings.Contains(q, "RETURNING id") {
					id = toString(first)
				}
			}
			if cerr := rows.Close(); err == nil {
				err = cerr
			}
			if err == nil {
				err = rows.Err()
			}
		}
		if err != nil && !s.failed {
			return err
		}
	}
	return nil
}

func toString(v any) string {
	switch v := v.(type) {
	case []byte:
		return string(v)
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	}
	return ""
}

// BenchmarkSendCheckVsSQL is one user's round trips against their replay.
func BenchmarkSendCheckVsSQL(b *testing.B) { benchSendCheckVsSQL(b, 1) }

// BenchmarkSendCheckVsSQL8Users is 8 users at once against 8 replays.
func BenchmarkSendCheckVsSQL8Users(b *testing.B) { benchSendCheckVsSQL(b, 8) }
