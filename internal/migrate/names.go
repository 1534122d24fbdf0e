package migrate

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
)

// FoldedNames describes a name column that becomes unique without case: a
// key column beside it holding deskkit.FoldName of the name, under a unique
// index (per Scope, or over the whole table).
type FoldedNames struct {
	Table   string // "deskkit_users"
	ID      string // the primary key column, "id"
	Scope   string // the column the names are unique within ("tenant_id"); "" for the whole table
	Name    string // "username"
	Key     string // the new key column, "username_folded"
	Created string // the column that orders rows by age ("created_at"); ties go by ID
	Index   string // the unique index's name
	Max     int    // the most characters a name may have
}

// Collision is a name that folded to the key of an older row's name and was
// renamed.
type Collision struct {
	Table   string
	Scope   int64 // the Scope column's value; 0 for a table-wide name
	KeptID  int64 // the older row, which keeps its name
	Kept    string
	ID      int64 // the newer row, renamed
	OldName string
	NewName string
}

// keyBytes is the width of a key column: deskkit.FoldName may write a
// character as up to three (full case folding), and a name has at most 128.
const keyBytes = 512

// FoldNames adds f.Key to f.Table, fills it for every row and puts the
// unique index on it. Names that fold to one key are resolved by age, so
// that the migration never fails on the data it finds: the oldest row
// (smallest f.Created, then smallest f.ID) keeps its name, and each newer one
// is renamed to its name with " (2)", " (3)", ... appended (the first whose
// key is free, the name shortened to fit f.Max; invisible characters and
// spaces at the ends dropped), in age order. Each rename
// is logged at WARN on log and returned.
//
// The rows are read into memory whole, once; this runs once per database.
func FoldNames(ctx context.Context, tx bun.Tx, d Dialect, f FoldedNames, log *slog.Logger) ([]Collision, error) {
	has, err := hasColumn(ctx, tx, d, f.Table, f.Key)
	if err != nil {
		return nil, err
	}
	if !has {
		// NOT NULL with a default, so that the rows there are take ''; every
		// writer sets the key, and PostgreSQL drops the default below.
		if _, err := tx.ExecContext(ctx, "ALTER TABLE ? ADD COLUMN ? VARCHAR(?) NOT NULL DEFAULT ''",
			bun.Ident(f.Table), bun.Ident(f.Key), keyBytes); err != nil {
			return nil, fmt.Errorf("add %s.%s: %w", f.Table, f.Key, err)
		}
	}
	scope := "0"
	if f.Scope != "" {
		scope = f.Scope
	}
	var rows []struct {
		ID    int64  `bun:"id"`
		Scope int64  `bun:"scope"`
		Name  string `bun:"name"`
	}
	// The identifiers are the caller's constants, never a client's.
	if err := tx.NewRaw(fmt.Sprintf("SELECT %s AS id, %s AS scope, %s AS name FROM %s ORDER BY scope, %s, %s",
		f.ID, scope, f.Name, f.Table, f.Created, f.ID)).Scan(ctx, &rows); err != nil {
		return nil, fmt.Errorf("read %s: %w", f.Table, err)
	}

	type scoped struct {
		scope int64
		key   string
	}
	type owner struct {
		id   int64
		name string
	}
	taken := make(map[scoped]owner, len(rows))
	keys := make([]string, len(rows))
	var losers []int
	// First the names that keep their key, so that a rename never takes the
	// key of a name that is already there, even of a younger row.
	for i, r := range rows {
		keys[i] = deskkit.FoldName(r.Name)
		k := scoped{r.Scope, keys[i]}
		if _, ok := taken[k]; ok {
			losers = append(losers, i)
			continue
		}
		taken[k] = owner{r.ID, r.Name}
	}
	var out []Collision
	for _, i := range losers {
		r := rows[i]
		kept := taken[scoped{r.Scope, keys[i]}]
		// The new name drops what deskkit.CheckUniqueName refuses today, so
		// that it can be written back as it reads.
		base := strings.TrimFunc(strings.Map(visible, r.Name), unicode.IsSpace)
		for n := 2; ; n++ {
			name := withSuffix(base, " ("+strconv.Itoa(n)+")", f.Max)
			key := deskkit.FoldName(name)
			if _, ok := taken[scoped{r.Scope, key}]; ok {
				continue
			}
			taken[scoped{r.Scope, key}] = owner{r.ID, name}
			keys[i] = key
			c := Collision{Table: f.Table, Scope: r.Scope, KeptID: kept.id, Kept: kept.name, ID: r.ID, OldName: r.Name, NewName: name}
			out = append(out, c)
			log.WarnContext(ctx, "deskkit: names that differ only in case or invisible characters; the newer one is renamed",
				"table", c.Table, "column", f.Name, f.Scope, c.Scope, "kept_id", c.KeptID, "kept_name", c.Kept,
				"renamed_id", c.ID, "old_name", c.OldName, "new_name", c.NewName)
			if _, err := tx.ExecContext(ctx, "UPDATE ? SET ? = ? WHERE ? = ?",
				bun.Ident(f.Table), bun.Ident(f.Name), name, bun.Ident(f.ID), r.ID); err != nil {
				return nil, fmt.Errorf("rename %s %d: %w", f.Table, r.ID, err)
			}
			break
		}
	}

	// The keys, in batches: one UPDATE ... FROM (VALUES ...) each. Both
	// databases name the columns of a VALUES list column1, column2.
	const batch = 500
	for start := 0; start < len(rows); start += batch {
		end := min(start+batch, len(rows))
		var values strings.Builder
		args := make([]any, 0, 2*(end-start))
		for i := start; i < end; i++ {
			if i > start {
				values.WriteString(", ")
			}
			values.WriteString("(?, ?)")
			args = append(args, rows[i].ID, keys[i])
		}
		q := fmt.Sprintf("UPDATE %s SET %s = v.column2 FROM (VALUES %s) AS v WHERE %s.%s = v.column1",
			f.Table, f.Key, values.String(), f.Table, f.ID)
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return nil, fmt.Errorf("fill %s.%s: %w", f.Table, f.Key, err)
		}
	}
	if d.Postgres {
		if _, err := tx.ExecContext(ctx, "ALTER TABLE ? ALTER COLUMN ? DROP DEFAULT", bun.Ident(f.Table), bun.Ident(f.Key)); err != nil {
			return nil, fmt.Errorf("%s.%s: %w", f.Table, f.Key, err)
		}
	}
	cols := f.Key
	if f.Scope != "" {
		cols = f.Scope + ", " + f.Key
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("CREATE UNIQUE INDEX IF NOT EXISTS %s ON %s (%s)", f.Index, f.Table, cols)); err != nil {
		return nil, fmt.Errorf("index %s: %w", f.Index, err)
	}
	return out, nil
}

// withSuffix returns name with suffix appended, name cut so that the whole
// has at most max characters.
func withSuffix(name, suffix string, max int) string {
	room := max - utf8.RuneCountInString(suffix)
	if utf8.RuneCountInString(name) > room {
		cut := 0
		for i := range name {
			if room == 0 {
				cut = i
				break
			}
			room--
		}
		name = strings.TrimFunc(name[:cut], unicode.IsSpace)
	}
	return strings.TrimFunc(name+suffix, unicode.IsSpace)
}

// visible is r, or -1 (dropped) for the invisible characters
// deskkit.CheckUniqueName refuses: format characters, default-ignorable code
// points, variation selectors.
func visible(r rune) rune {
	if unicode.In(r, unicode.Cf, unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector) {
		return -1
	}
	return r
}

// hasColumn reports whether table has column, in the current schema.
func hasColumn(ctx context.Context, tx bun.Tx, d Dialect, table, column string) (bool, error) {
	var n int
	var err error
	if d.Postgres {
		err = tx.NewRaw(`SELECT count(*) FROM information_schema.columns
WHERE table_schema = current_schema() AND table_name = ? AND column_name = ?`, table, column).Scan(ctx, &n)
	} else {
		err = tx.NewRaw("SELECT count(*) FROM pragma_table_info(?) WHERE name = ?", table, column).Scan(ctx, &n)
	}
	if err != nil {
		return false, fmt.Errorf("read columns of %s: %w", table, err)
	}
	return n > 0, nil
}
