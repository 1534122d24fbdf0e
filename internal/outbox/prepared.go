package outbox

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/uptrace/bun"
)

// Prepared is EnqueueQuery's PostgreSQL statement for one targets query,
// prepared once per connection of the pool (database/sql keeps a prepared
// statement per connection and reuses it inside transactions), so that
// PostgreSQL does not parse and plan it again for every event: planning is
// most of the statement's own time.
//
// It is prepared by Prepare, which takes a connection of the pool, so it is
// called where none is held: never inside a transaction, where, with the
// pool used up by transactions doing the same (or with a pool of one), the
// wait for a second connection would never end. Until Prepare succeeded, an
// enqueue runs the plain query; once it has, a transaction that has not
// used the statement on its own connection prepares it there
// (database/sql's Tx.StmtContext), on the connection it already holds.
//
// Hosts whose connections go through a pooler that does not keep prepared
// statements (PgBouncer in transaction mode before 1.21) must not use it.
type Prepared struct {
	bun     *bun.DB
	db      *sql.DB
	targets string
	query   string

	stmt atomic.Pointer[sql.Stmt] // nil until Prepare succeeds
}

// NewPrepared returns the prepared form of EnqueueQuery with targets, over
// db; it prepares nothing before Prepare.
func NewPrepared(db *bun.DB, targets string) *Prepared {
	return &Prepared{bun: db, db: db.DB, targets: targets, query: dollars(enqueueSQL(targets))}
}

// dollars numbers the ? placeholders of q as PostgreSQL's $1, $2...: the
// queries here hold no ? of their own.
func dollars(q string) string {
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Prepare prepares the statement on a connection of the pool, unless that
// is done. It waits for a connection: call it where the caller holds none,
// never inside a transaction. It holds no lock while it waits, so that an
// enqueue inside a transaction never waits behind it (the enqueue would
// hold a connection while Prepare waits for one): two that race prepare
// twice, and the loser closes its statement.
func (p *Prepared) Prepare(ctx context.Context) error {
	if p.stmt.Load() != nil {
		return nil
	}
	s, err := p.db.PrepareContext(ctx, p.query)
	if err != nil {
		return fmt.Errorf("outbox: prepare enqueue: %w", err)
	}
	if !p.stmt.CompareAndSwap(nil, s) {
		s.Close()
	}
	return nil
}

// enqueue runs the prepared statement in tx, or reports false when tx is
// not a transaction of p's pool or Prepare has not succeeded yet (the
// caller then runs the plain query). It takes no connection but tx's.
func (p *Prepared) enqueue(ctx context.Context, tx bun.IDB, args []any) (ok bool, isNew bool, n int, err error) {
	var t bun.Tx
	switch tt := tx.(type) {
	case bun.Tx:
		t = tt
	case *bun.Tx:
		t = *tt
	default:
		return false, false, 0, nil
	}
	if t.NewSelect().DB() != p.bun {
		// A transaction of another pool (a host's own): the statement is
		// prepared on this one's connections only.
		return false, false, 0, nil
	}
	stmt := p.stmt.Load()
	if stmt == nil {
		return false, false, 0, nil
	}
	var woke bool
	var isNewN int
	if err := t.Tx.StmtContext(ctx, stmt).QueryRowContext(ctx, args...).Scan(&isNewN, &n, &woke); err != nil {
		return true, false, 0, fmt.Errorf("outbox: enqueue: %w", err)
	}
	return true, isNewN > 0, n, nil
}
