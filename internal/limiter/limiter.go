// Package limiter keeps rate limits in a database table, so that they hold
// across server replicas and parallel requests. The services that limit
// something (verify's sends and checks, channel's test messages) each keep
// their own table of this shape:
//
//	CREATE TABLE <table> (
//	    limit_key       VARCHAR(400) NOT NULL PRIMARY KEY,
//	    window_start_ms BIGINT       NOT NULL,
//	    window_end_ms   BIGINT       NOT NULL,
//	    hits            INTEGER      NOT NULL
//	);
//
// Windows are fixed and open with the first event after the last one
// closed: "10 an hour" means at most 10 within the hour that starts at the
// first of them. Each limit is taken by one atomic upsert guarded by the
// limit, so two requests, in one process or two, cannot both take the last
// unit.
package limiter

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/deskkit/deskkit"
)

// Limit is one rate limit: at most Max events per Window for one Key.
type Limit struct {
	// Name says which of a service's limits this is ("per_hour"), for
	// metrics: one of a few fixed names, never a key.
	Name   string
	Key    string
	Max    int // 0 or less: no limit
	Window time.Duration
	// Msg is for the client, in the reader's language: "at most 10 codes
	// an hour to this address".
	Msg deskkit.Text
	// Cost is how many events this one counts as (a test message to ten
	// addresses is ten); 1 if 0. A cost above Max is always refused.
	Cost int
}

// refusal is the error of l refusing, retryable after d.
func (l Limit) refusal(d time.Duration) *deskkit.RateLimitError {
	return deskkit.RateLimited(d, l.Msg)
}

// Refusal is how Take and Hold refuse: the *deskkit.RateLimitError the
// client gets (errors.As finds it, errors.Is(err, deskkit.ErrRateLimited)
// holds), with the Name of the limit that refused.
type Refusal struct {
	Limit string
	*deskkit.RateLimitError
}

// Unwrap is the RateLimitError.
func (r *Refusal) Unwrap() error { return r.RateLimitError }

// Take counts one event against each limit in table at now (Unix
// milliseconds), and refuses with a *Refusal naming the first exhausted
// limit in key order. All limits are taken by one upsert
// statement, one round trip however many there are, its rows in key order
// (the lock order of limit rows). A refusal may leave the limits that
// fitted taken: call Take inside a transaction, which the refusal rolls
// back. Limits given twice under one key count as one of their summed
// cost, which is what taking them one after the other would do.
func Take(ctx context.Context, tx bun.IDB, table string, now int64, limits []Limit) error {
	return upsert(ctx, tx, table, now, limits, false)
}

// TakeThen is Take followed, if every limit fits, by the caller's
// statement then(fits), in one round trip on PostgreSQL: the upsert and
// the statement run as one, the upsert in a WITH, and fits is an SQL
// condition, true when every limit fitted, that the statement must put in
// its WHERE (it may be run whatever the outcome). On SQLite, which has no
// data-modifying WITH, it runs after Take succeeded, with fits always
// true. As with Take, a refusal may leave work done: call it inside a
// transaction, which the refusal rolls back.
func TakeThen(ctx context.Context, tx bun.IDB, table string, now int64, limits []Limit, then func(fits string) bun.Query) error {
	if tx.Dialect().Name() != dialect.PG {
		if err := Take(ctx, tx, table, now, limits); err != nil {
			return err
		}
		if _, err := tx.NewRaw("?", then("1 = 1")).Exec(ctx); err != nil {
			return fmt.Errorf("after limits: %w", err)
		}
		return nil
	}
	return upsertThen(ctx, tx, table, now, limits, false, then)
}

// Hold refuses as Take would refuse an event of cost 1 against l, but
// counts nothing: it locks l's row (creating it, or opening a new window
// if the last one closed) until tx ends, so that the caller can decide
// under the lock whether the event counts (then Take, which fits) or not.
// Checks of a code hold the failure limit this way: parallel checks of one
// user queue on its row, none compares once it is exhausted, and a right
// code costs no second statement to give a unit back.
func Hold(ctx context.Context, tx bun.IDB, table string, now int64, l Limit) error {
	l.Cost = 1
	return upsert(ctx, tx, table, now, []Limit{l}, true)
}

// row is a limit's row as an upsert writes it.
type row struct {
	Key   string `bun:"limit_key"`
	Start int64  `bun:"window_start_ms"`
	End   int64  `bun:"window_end_ms"`
	Hits  int    `bun:"hits"`
}

// upsert is Take, or with hold, Hold: each row gets nothing added, but
// must have room for its cost. It is one statement whatever the number of
// limits: each row is inserted, or, if it exists, updated only where its
// window has closed (a new window opens with the event) or it has room
// for the event's cost (the guard), and the statement returns the keys it
// wrote; a key missing from them is a refusal.
func upsert(ctx context.Context, tx bun.IDB, table string, now int64, limits []Limit, hold bool) error {
	return upsertThen(ctx, tx, table, now, limits, hold, nil)
}

// upsertThen is upsert, with then (if not nil) the statement of TakeThen
// on PostgreSQL.
func upsertThen(ctx context.Context, tx bun.IDB, table string, now int64, limits []Limit, hold bool, then func(fits string) bun.Query) error {
	ls := make([]Limit, 0, len(limits))
	for _, l := range limits {
		if l.Max <= 0 {
			continue
		}
		if i := slices.IndexFunc(ls, func(o Limit) bool { return o.Key == l.Key }); i >= 0 {
			ls[i].Cost = max(ls[i].Cost, 1) + max(l.Cost, 1)
			continue
		}
		ls = append(ls, l)
	}
	slices.SortFunc(ls, func(a, b Limit) int { return cmp.Compare(a.Key, b.Key) })
	rows := make([]row, 0, len(ls))
	for _, l := range ls {
		cost := max(l.Cost, 1)
		if cost > l.Max {
			continue // never fits; refused below, in its place in key order
		}
		add := cost
		if hold {
			add = 0
		}
		rows = append(rows, row{Key: l.Key, Start: now, End: now + l.Window.Milliseconds(), Hits: add})
	}
	var keys []string
	if len(ls) == 0 && then != nil {
		// No limit to count: the caller's statement alone.
		if _, err := tx.NewRaw("?", then("1 = 1")).Exec(ctx); err != nil {
			return fmt.Errorf("after limits: %w", err)
		}
	}
	if len(rows) > 0 {
		q := tx.NewInsert().Model(&rows).ModelTableExpr("? AS l", bun.Ident(table)).
			On("CONFLICT (limit_key) DO UPDATE").
			Set("window_start_ms = CASE WHEN l.window_end_ms <= ? THEN excluded.window_start_ms ELSE l.window_start_ms END", now).
			Set("window_end_ms = CASE WHEN l.window_end_ms <= ? THEN excluded.window_end_ms ELSE l.window_end_ms END", now).
			Set("hits = CASE WHEN l.window_end_ms <= ? THEN excluded.hits ELSE l.hits + excluded.hits END", now).
			Where("l.window_end_ms <= ?", now)
		for _, l := range ls {
			if cost := max(l.Cost, 1); cost <= l.Max {
				// The most hits the row may hold for the event to fit.
				q = q.WhereOr("excluded.limit_key = ? AND l.hits <= ?", l.Key, l.Max-cost)
			}
		}
		if then != nil {
			keys = make([]string, 0, len(rows))
			fits := "(SELECT count(*) FROM taken) = " + strconv.Itoa(len(rows))
			if len(rows) < len(ls) {
				fits = "FALSE" // a limit that never fits
			}
			err := tx.NewRaw("WITH taken AS (?), rest AS (?) SELECT limit_key FROM taken", q.Returning("limit_key"), then(fits)).Scan(ctx, &keys)
			if err != nil {
				return fmt.Errorf("take limit: %w", err)
			}
		} else if len(rows) == 1 {
			// One row: how many rows the statement wrote says whether it
			// fitted, without a result set to read. (database/sql watches
			// the context of every statement that returns rows with a
			// goroutine of its own; a hold or take of one limit is on
			// every check of a code.)
			res, err := q.Exec(ctx)
			if err != nil {
				return fmt.Errorf("take limit: %w", err)
			}
			n, err := res.RowsAffected()
			if err != nil {
				return fmt.Errorf("take limit: %w", err)
			}
			if n == 1 {
				keys = []string{rows[0].Key}
			}
		} else {
			keys = make([]string, 0, len(rows))
			if err := q.Returning("limit_key").Scan(ctx, &keys); err != nil {
				return fmt.Errorf("take limit: %w", err)
			}
		}
	}
	for _, l := range ls {
		if slices.Contains(keys, l.Key) {
			continue
		}
		if max(l.Cost, 1) > l.Max {
			return &Refusal{Limit: l.Name, RateLimitError: l.refusal(l.Window)}
		}
		var end int64
		err := tx.NewSelect().Table(table).Column("window_end_ms").
			Where("limit_key = ?", l.Key).Scan(ctx, &end)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("read limit: %w", err)
		}
		return &Refusal{Limit: l.Name, RateLimitError: l.refusal(time.Duration(max(end-now, 1000)) * time.Millisecond)}
	}
	return nil
}

// GiveBack returns one event to the limit of key in table, an event Take
// counted at takenAt (Unix milliseconds). Only the window that counted it
// gets it back: once that window has closed, the event is forgotten anyway,
// and taking a unit from the window that followed would let one more event
// through. Giving back twice is the caller's to prevent.
func GiveBack(ctx context.Context, tx bun.IDB, table, key string, takenAt int64) error {
	_, err := tx.NewUpdate().Table(table).
		Set("hits = hits - 1").
		Where("limit_key = ? AND hits > 0 AND window_start_ms <= ? AND window_end_ms > ?", key, takenAt, takenAt).
		Exec(ctx)
	if err != nil {
		return fmt.Errorf("give back limit: %w", err)
	}
	return nil
}

// Purge deletes the rows of table whose windows closed before now and
// returns how many went.
func Purge(ctx context.Context, db bun.IDB, table string, now int64) (int64, error) {
	res, err := db.NewDelete().Table(table).Where("window_end_ms < ?", now).Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("purge limits: %w", err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}
