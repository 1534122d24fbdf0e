package migrate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"
)

// CheckTimeout bounds CheckTables. Constructors take no context, so the
// check runs under a background context of its own with this deadline: a
// database that cannot answer in that time fails the constructor (with an
// error that says so) rather than holding it up.
const CheckTimeout = 5 * time.Second

// CheckTables makes sure that db has tables, with one catalog query bounded
// by CheckTimeout, for a service constructor: call names it ("trash.New")
// and migrateCall the function that creates the tables ("trash.Migrate").
// A host that forgot the migration gets an error naming that call at
// startup, rather than a 500 with an SQL error at its first request:
//
//	trash.New: table deskkit_trash does not exist: run trash.Migrate(ctx, db) first
//
// A database that cannot answer (down, closed, slower than CheckTimeout)
// is a different error, which does not mention migrations and wraps the
// database's (context.DeadlineExceeded for the bound).
//
// A table counts if a statement of db would find it by its bare name: on
// PostgreSQL, a table or partitioned table visible through the
// connection's search_path; on SQLite, a table of the main database.
func CheckTables(db *bun.DB, call, migrateCall string, tables ...string) error {
	d, err := DialectOf(db)
	if err != nil {
		return fmt.Errorf("%s: %w", call, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), CheckTimeout)
	defer cancel()
	q := `SELECT name FROM sqlite_master WHERE type = 'table' AND name IN (?)`
	if d.Postgres {
		q = `SELECT c.relname FROM pg_catalog.pg_class c
WHERE c.relname IN (?) AND c.relkind IN ('r', 'p') AND pg_catalog.pg_table_is_visible(c.oid)`
	}
	var found []string
	if err := db.NewRaw(q, bun.List(tables)).Scan(ctx, &found); err != nil {
		if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("%s: checking for its tables: the database did not answer within %s: %w", call, CheckTimeout, err)
		}
		return fmt.Errorf("%s: checking for its tables: %w", call, err)
	}
	var missing []string
	for _, t := range tables {
		if !slices.Contains(found, t) {
			missing = append(missing, t)
		}
	}
	switch len(missing) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("%s: table %s does not exist: run %s(ctx, db) first", call, missing[0], migrateCall)
	default:
		return fmt.Errorf("%s: tables %s do not exist: run %s(ctx, db) first", call, strings.Join(missing, ", "), migrateCall)
	}
}
