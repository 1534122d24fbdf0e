package main

import (
	"context"
	"database/sql"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/deskkit/deskkit/internal/dbtest"
)

// Verification against its SQL: BenchmarkSendCheckVsSQL* run the send +
// check round trips of benchSendCheck through the reference server,
// recording every statement each user's requests ran (a bun query hook,
// BEGIN and COMMIT included), then empty the verification tables and
// replay those statements, in order, from as many goroutines as there were
// users, each on a connection of its own opened with pgdriver through
// database/sql: what a pgbench script of the same statements does, without
// HTTP, JSON, bun or the verify package. The one value the replay cannot
// take from the record is the id of a code row, which the sequence gives
// anew: as pgbench's \gset would, the replay reads it from the RETURNING
// of the statement that writes the row and writes it into the statements
// that follow. vs-sql-x is the server's round trips per second over the
// replay's.
//
//	DESKKIT_TEST_DATABASE_URL=... go test ./examples/server -run '^$' -bench VsSQL -benchtime 1000x -count 3

// stmt is one statement as a request ran it.
type stmt struct {
	query  string
	failed bool
}

// stmtLog is a bun query hook that records, per benchmark user (the
// benchUser context value), the statements run on the user's behalf.
type stmtLog struct {
	mu       sync.Mutex
	byUser   map[int][]stmt
	untagged int // statements without a user: run outside any request
}

func (l *stmtLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.byUser, l.untagged = map[int][]stmt{}, 0
}

func (l *stmtLog) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context { return ctx }

func (l *stmtLog) AfterQuery(ctx context.Context, e *bun.QueryEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	u, ok := ctx.Value(benchUser{}).(int)
	if !ok {
		l.untagged++
		return
	}
	l.byUser[u] = append(l.byUser[u], stmt{e.Query, e.Err != nil && e.Err != sql.ErrNoRows})
}

// codeID is how the statements after a code row's write name it.
var codeID = regexp.MustCompile(`\(id = \d+ AND`)

func benchSendCheckVsSQL(b *testing.B, users int) {
	log := &stmtLog{byUser: map[int][]stmt{}}
	db, rate := benchSendCheckSQL(b, users, false, log)
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
	if _, err := db.ExecContext(ctx, "TRUNCATE "+strings.Join(tables, ", ")+" RESTART IDENTITY"); err != nil {
		b.Fatal(err)
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
	for _, s := range log.byUser {
		statements += len(s)
	}
	var wg sync.WaitGroup
	errs := make(chan error, users)
	start := time.Now()
	for u := range users {
		wg.Go(func() {
			if err := replay(ctx, sqldb, log.byUser[u]); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	sqlRate := float64(b.N) / elapsed.Seconds()
	b.ReportMetric(sqlRate, "sql-roundtrips/s")
	b.ReportMetric(rate/sqlRate, "vs-sql-x")
	b.ReportMetric(float64(statements)/float64(b.N), "statements/roundtrip")
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
			q = codeID.ReplaceAllString(q, "(id = "+id+" AND")
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
