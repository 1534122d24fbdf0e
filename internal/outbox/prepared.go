package outbox

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/uptrace/bun"
)

// Prepared is EnqueueQuery's PostgreSQL statement for one targets query,
// prepared once per connection of the pool (database/sql keeps a prepared
// statement per connection and reuses it inside transactions), so that
// PostgreSQL does not parse and plan it again for every event: planning is
// most of the statement's own time.
//
// Hosts whose connections go through a pooler that does not keep prepared
// statements (PgBouncer in transaction mode before 1.21) must not use it.
type Prepared struct {
	bun     *bun.DB
	db      *sql.DB
	targets string
	query   string

	mu   sync.Mutex
	stmt *sql.Stmt
}

// NewPrepared returns the prepared form of EnqueueQuery with targets, over
// db; it prepares nothing before its first use.
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

func (p *Prepared) statement(ctx context.Context) (*sql.Stmt, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stmt == nil {
		s, err := p.db.PrepareContext(ctx, p.query)
		if err != nil {
			return nil, err
		}
		p.stmt = s
	}
	return p.stmt, nil
}

// enqueue runs the prepared statement in tx, or reports false when tx is
// not a transaction of p's pool (the caller then runs the plain query).
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
	sqlTx := t.Tx
	stmt, err := p.statement(ctx)
	if err != nil {
		return true, false, 0, fmt.Errorf("outbox: prepare enqueue: %w", err)
	}
	var woke bool
	var isNewN int
	if err := sqlTx.StmtContext(ctx, stmt).QueryRowContext(ctx, args...).Scan(&isNewN, &n, &woke); err != nil {
		return true, false, 0, fmt.Errorf("outbox: enqueue: %w", err)
	}
	return true, isNewN > 0, n, nil
}
