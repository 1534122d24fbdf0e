package migrate

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"
)

// CheckTimeout bounds Check. Constructors take no context, so the
// check runs under a background context of its own with this deadline: a
// database that cannot answer in that time fails the constructor (with an
// error that says so) rather than holding it up.
const CheckTimeout = 5 * time.Second

// Set is one migrations table and the migrations Run applies under it,
// for Check: what Run(ctx, db, Table, FS, Steps...) applies.
type Set struct {
	Table string // "deskkit_trash_migrations"
	FS    fs.FS
	Steps []Step
}

// Check makes sure that db has tables and every migration of sets applied,
// with two statements bounded together by CheckTimeout (one catalog query,
// one read of the migrations tables), for a service constructor: call
// names it ("trash.New") and migrateCall the function that creates the
// tables ("trash.Migrate"). A host that forgot the migration, or upgraded
// deskkit without running it again, gets an error naming that call at
// startup, rather than a 500 with an SQL error at its first request:
//
//	trash.New: table deskkit_trash does not exist: run trash.Migrate(ctx, db) first
//	channel.New: 1 migration is not applied (20261201000001_in_flight_count): run channel.Migrate(ctx, db) first
//
// A database that cannot answer (down, closed, slower than CheckTimeout)
// is a different error, which does not mention migrations and wraps the
// database's (context.DeadlineExceeded for the bound). A migration applied
// that sets do not know (a newer deskkit ran on the database) is no error.
//
// A table counts if a statement of db would find it by its bare name: on
// PostgreSQL, a table or partitioned table visible through the
// connection's search_path; on SQLite, a table of the main database.
func Check(db *bun.DB, call, migrateCall string, tables []string, sets ...Set) error {
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
	all := slices.Clone(tables)
	for _, set := range sets {
		all = append(all, set.Table)
	}
	unanswered := func(err error) error {
		if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("%s: checking for its tables: the database did not answer within %s: %w", call, CheckTimeout, err)
		}
		return fmt.Errorf("%s: checking for its tables: %w", call, err)
	}
	var found []string
	if err := db.NewRaw(q, bun.List(all)).Scan(ctx, &found); err != nil {
		return unanswered(err)
	}
	var missing []string
	for _, t := range all {
		if !slices.Contains(found, t) {
			missing = append(missing, t)
		}
	}
	switch len(missing) {
	case 0:
		return checkApplied(ctx, db, d, call, migrateCall, sets, unanswered)
	case 1:
		return fmt.Errorf("%s: table %s does not exist: run %s(ctx, db) first", call, missing[0], migrateCall)
	default:
		return fmt.Errorf("%s: tables %s do not exist: run %s(ctx, db) first", call, strings.Join(missing, ", "), migrateCall)
	}
}

// checkApplied is Check's second half, once every table exists: the
// migrations of sets that their tables do not list as applied.
func checkApplied(ctx context.Context, db *bun.DB, d Dialect, call, migrateCall string, sets []Set, unanswered func(error) error) error {
	if len(sets) == 0 {
		return nil
	}
	type named struct{ name, label string }
	var want []named
	var selects []string
	for _, set := range sets {
		ms, err := Migrations(d, set.FS, set.Steps...)
		if err != nil {
			return fmt.Errorf("%s: %w", call, err)
		}
		for _, m := range ms.Sorted() {
			label := m.Name
			if m.Comment != "" {
				label += "_" + m.Comment
			}
			want = append(want, named{m.Name, label})
		}
		selects = append(selects, "SELECT name FROM "+set.Table)
	}
	var applied []string
	if err := db.NewRaw(strings.Join(selects, " UNION ALL ")).Scan(ctx, &applied); err != nil {
		return unanswered(err)
	}
	var missing []string
	for _, m := range want {
		if !slices.Contains(applied, m.name) {
			missing = append(missing, m.label)
		}
	}
	switch len(missing) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("%s: 1 migration is not applied (%s): run %s(ctx, db) first", call, missing[0], migrateCall)
	default:
		return fmt.Errorf("%s: %d migrations are not applied (%s): run %s(ctx, db) first", call, len(missing), strings.Join(missing, ", "), migrateCall)
	}
}
