// Package outbox is the one durable queue of the module: a transactional
// outbox of events, one delivery row per place an event goes, and workers
// that claim due deliveries, make one attempt each and record its outcome,
// with retries on a schedule. The channel registry delivers events to
// channels through it, and the verifier its notices to old addresses.
//
// # Publishing
//
// An Enqueuer writes an event and its deliveries, to the targets a query
// chooses, through the caller's transaction: rolled back, nothing is sent;
// committed, the deliveries are made even if the process dies the next
// instant. It is the one way delivery rows are written (the channel
// registry's events and the verifier's notices alike), and it does no
// network I/O. On PostgreSQL it is one statement, which also NOTIFYs the
// kind's channel when it wrote a delivery, in that transaction: PostgreSQL
// delivers it at commit, once per transaction and payload.
//
// # Claiming
//
// A Worker claims due deliveries of its kind in batches, one statement
// per claim, at most Config.BatchSize. Run claims ahead: beside the
// Config.Concurrency attempts, up to a batch (at most Concurrency) of
// claimed deliveries wait in the worker for a slot, so that an attempt
// that ends starts the next without waiting for a claim; while claims
// find deliveries, the next is made once a whole batch has room again, or
// shortly after a slot went idle. Claims wait for work: a worker woken by
// a publish (Listen's NOTIFY on PostgreSQL, or Wake) lingers up to 2 ms
// for more wakes, so that a claim takes the events of that moment
// together, and after a claim that took every due delivery there was it
// waits for the next wake or Config.Poll, rather than look again within
// milliseconds (which it does only while no listener holds a LISTEN). At
// a steady trickle a delivery then costs one claim, not three (two of
// them empty). A claimed delivery waits at most one
// attempt's time (every slot's attempt ends, and takes the next), and
// Run gives the waiting ones back when it stops. A claim is fair
// (claim.go says how): it takes every tenant's first due delivery before
// any tenant's second, and within a tenant every target's first before
// any second; a target has at most Config.TargetInFlight deliveries in
// flight, counted from the leased rows of every worker on the database,
// also while workers of several replicas claim at the same instant; and a
// tenant holds at most Config.TenantSlots of a worker's slots. On
// PostgreSQL rows are taken FOR UPDATE SKIP LOCKED, and a claim skips a
// target that another worker's claim is taking from at that instant, so
// that workers of every replica share the queue without waiting for each
// other; on SQLite (one process) SQLite's single writer serialises the
// claims. A claim moves the row's due time to the end of a lease
// (Config.Lease, longer than a wait for a slot, an attempt and the
// outcome's record can take: two attempts' time and a few seconds) and
// stamps it with a token: a worker that dies mid-attempt loses the row
// when the lease ends and another makes the attempt again. Delivery is
// therefore at least once; receivers deduplicate on the event's id, the
// same on every attempt. An outcome is recorded only while the token
// still matches, so the late outcome of a worker whose lease ran out is
// dropped, not counted twice.
//
// # Flow
//
// Each target's in-flight limit adapts between Config.TargetInFlight and
// a ceiling (AIMD on the outcomes' signs of overload and latency), a
// failure's Retry-After pauses the whole target, and an optional rate per
// target spaces its attempts evenly; the state is a row per target in
// deskkit_outbox_targets, shared by every worker on the database. flow.go
// says how each moves.
//
// # Recording
//
// Outcomes are recorded in flushes: an outcome waits at most
// Config.FlushEvery (5 ms) for others, or less once Config.FlushSize (100)
// have come, and a flush records all of them in one transaction: the
// deliveries' new states, the attempts' rows and the targets' flow (one
// statement on PostgreSQL, whose outcomes come as JSON, in a function
// whose plan PostgreSQL keeps, so that a flush of one outcome is not
// planned anew, through PgBouncer too), and the handler's Recorded
// for the whole flush. A process that dies
// between an attempt and its flush has those attempts made again when
// their leases end (at least once); nothing else is made twice. A flush
// that fails for another reason than a lost connection records its
// outcomes one by one, so that one outcome's fault costs only itself.
//
// A connection lost under a flush (a database restart, a failover, a
// network blip that dropped the pool's connections) does not lose its
// outcomes, which would have the attempts made again, duplicates for the
// receivers a lease later: the transaction is tried again on a fresh
// connection (the pool's lost idle connections are pinged away first),
// after pauses of 50 ms doubling to 1 s, at most 8 tries in about 2 to 4
// s, and never once the flush's leases have ended; the token check still
// holds every try, so a try whose COMMIT went through before its
// connection was lost is not recorded twice. Only a lost connection (EOF,
// a reset or broken pipe, a connection the driver closed, PostgreSQL's
// connection errors and "terminating connection") is tried again. A
// database down for longer loses the flush's outcomes: it is logged, and
// the deliveries are attempted again when their leases end. A shutdown
// waits for the attempts in flight and records their outcomes before Run
// returns.
//
// # Retries
//
// Config.Schedule holds the delay before each attempt, the first counted
// from the enqueue (DefaultSchedule: 0, 5s, 5m, 30m, 2h, 5h, 10h, 10h, as
// Svix's), each spread by +-Config.Jitter (10 %) so that a receiver that
// failed for many deliveries at once is not hit by all of them again at
// the same instant. A failed attempt whose outcome says Retry-After waits
// at least that (at most MaxRetryAfter). An outcome marked Final, or the
// failure of the schedule's last attempt, ends the delivery FAILED.
//
// # Tables under churn
//
// A delivery row is written once and updated twice, by its claim
// (due_at_ms, lease_token, attempts) and by its outcome (status,
// finished_at_ms, lease_token, the last_* columns), each on PostgreSQL a
// new row version. Neither update can be HOT: each changes a column of
// deskkit_outbox_target_due_idx (the pending index the claim reads), of
// its predicate (status) or of deskkit_outbox_leased_idx's, so each
// writes new entries in every index, and a delivered row leaves two dead
// entries in the pending index (its insert's and its claim's) and two dead
// versions in the table, until vacuum removes them. A claim steps over
// the dead entries of the targets it reaches, so a pending index bloated
// by past drains makes every claim dearer. On PostgreSQL the migrations
// therefore set the tables' autovacuum by churn rather than by size
// (20261202000002_lean_tables says each value and why): the deliveries
// table is vacuumed after 10,000 dead versions (5,000 deliveries) however
// large its log of finished rows, always with its indexes cleaned, and
// its statistics renewed every 20,000 changes; the insert-mostly events
// and attempts are vacuumed every 5 % of growth or deletion. The
// fillfactor stays 100: room kept free on a page is for HOT updates, and
// there are none (examples/bench measured 0.0 %, and a table 15 % larger
// at 70). Autovacuum itself must be on (it is by default): with it off
// the table keeps two dead versions a delivery for good. An operator
// checks pg_stat_user_tables for deskkit_outbox_deliveries (n_dead_tup,
// last_autovacuum, autovacuum_count) and
// pg_relation_size('deskkit_outbox_target_due_idx') against the backlog:
// the pending index holds only PENDING rows and their dead entries.
// SQLite reuses a page's free space at the next write and needs none of
// this.
package outbox

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/internal/migrate"
)

// Statuses of a delivery.
const (
	Pending   = "PENDING"
	Succeeded = "SUCCEEDED"
	Failed    = "FAILED"
)

// notifyChannel is the PostgreSQL NOTIFY channel of the outbox; the payload
// is the kind.
const notifyChannel = "deskkit_outbox"

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrate creates or updates the outbox's tables (deskkit_outbox_events,
// deskkit_outbox_deliveries, deskkit_outbox_attempts and the
// deskkit_outbox_migrations bookkeeping). Every service that uses the
// outbox runs it from its own Migrate; it is safe to run from several
// processes at once and more than once.
func Migrate(ctx context.Context, db *bun.DB) error {
	return migrate.Run(ctx, db, Migrations.Table, Migrations.FS)
}

// Migrations is what Migrate applies, for the constructors of the services
// over the outbox to check (migrate.Check).
var Migrations = migrate.Set{Table: "deskkit_outbox_migrations", FS: migrationFiles}

// Event is an event as the outbox keeps it.
type Event struct {
	TenantID int64
	ID       string
	Type     string
	Time     time.Time
	// Title and Text are the English: what every reader gets when
	// Messages is nil.
	Title string
	Text  string
	// Data is a JSON object.
	Data json.RawMessage
	// Messages is the title and text as messages, JSON that the kind's
	// handler reads and writes (the channels': key and arguments, which a
	// delivery writes in its reader's language); nil for none, and for
	// every event enqueued before the column was added.
	Messages json.RawMessage
}

// eventRow is a row of deskkit_outbox_events.
type eventRow struct {
	bun.BaseModel `bun:"table:deskkit_outbox_events"`

	TenantID   int64   `bun:"tenant_id,pk"`
	EventID    string  `bun:"event_id,pk"`
	EventType  string  `bun:"event_type"`
	OccurredAt int64   `bun:"occurred_at_ms"`
	Title      string  `bun:"title"`
	Body       string  `bun:"body"`
	Data       string  `bun:"data"`
	Messages   *string `bun:"messages"`
	CreatedAt  int64   `bun:"created_at_ms"`
}

func (r eventRow) event() Event {
	return Event{
		TenantID: r.TenantID,
		ID:       r.EventID,
		Type:     r.EventType,
		Time:     time.UnixMilli(r.OccurredAt),
		Title:    r.Title,
		Text:     r.Body,
		Data:     json.RawMessage(r.Data),
		Messages: rawOrNil(r.Messages),
	}
}

// rawOrNil is a nullable JSON column as a json.RawMessage, nil for NULL.
func rawOrNil(s *string) json.RawMessage {
	if s == nil {
		return nil
	}
	return json.RawMessage(*s)
}

// deliveryRow is a row of deskkit_outbox_deliveries.
type deliveryRow struct {
	bun.BaseModel `bun:"table:deskkit_outbox_deliveries"`

	ID             int64   `bun:"id,pk,autoincrement"`
	TenantID       int64   `bun:"tenant_id"`
	EventID        string  `bun:"event_id"`
	Kind           string  `bun:"kind"`
	TargetID       int64   `bun:"target_id"`
	Payload        *string `bun:"payload"`
	Status         string  `bun:"status"`
	Attempts       int     `bun:"attempts"`
	Step           int     `bun:"step"`
	DueAt          *int64  `bun:"due_at_ms"`
	LeaseToken     *string `bun:"lease_token"`
	LastStatusCode *int    `bun:"last_status_code"`
	LastError      *string `bun:"last_error"`
	LastErrorJSON  *string `bun:"last_error_json"`
	CreatedAt      int64   `bun:"created_at_ms"`
	FinishedAt     *int64  `bun:"finished_at_ms"`
}

// notifyKind NOTIFYs, on PostgreSQL, the workers of kind: at the commit of
// db's transaction, or at once outside one.
func notifyKind(ctx context.Context, db bun.IDB, kind string) error {
	if !isPostgres(db) {
		return nil
	}
	if _, err := db.ExecContext(ctx, "SELECT pg_notify(?, ?)", notifyChannel, kind); err != nil {
		return fmt.Errorf("outbox: notify: %w", err)
	}
	return nil
}

func isPostgres(db bun.IDB) bool {
	d, err := migrate.DialectOf(db)
	return err == nil && d.Postgres
}
