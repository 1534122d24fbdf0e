package trash

import (
	"context"
	"slices"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
)

// Restorer is implemented by the host, which owns tasks and sprints: the
// library only keeps the trash entries. Each method runs inside the
// transaction that also removes the entry, so when it returns an error the
// whole operation rolls back and the entry stays in the trash.
//
// Restore brings the entry's target back. For a sprint, the host decides which
// of its tasks come back with it; tasks with trash entries of their own are
// not among them (they stay in the trash until restored themselves).
//
// Purge deletes the entry's target for good. When a sprint is purged, the
// library purges the trash entries of its tasks first, through Purge too.
//
// A Restorer that also implements BatchRestorer or BatchPurger is handed
// whole batches instead, which restore-all and clear-all use.
//
// # Only database work, through tx
//
// The methods must do database work only, and only through tx: no network
// I/O (no mail, SMS, webhook or HTTP call), no other connection. They run
// while the trash holds its locks (on SQLite, the database's write lock), and
// the trash runs the transaction again if PostgreSQL rolls it back for a
// deadlock, so a method may be called more than once for one entry; only
// what went through tx is undone. What must be announced after a restore is
// written as a row in tx and sent after the commit (an outbox).
//
// # What the host must lock
//
// The trash locks its own rows; the host must lock the rows of its own that
// the restored target depends on, or a concurrent host transaction can
// invalidate them between the check and the commit:
//
//   - Restoring a task must lock the row of the sprint it goes back into
//     (SELECT ... FOR SHARE on PostgreSQL, or FOR UPDATE) and check that the
//     sprint is live. Without the lock, a concurrent delete of that sprint
//     commits after the check and leaves the task live inside a trashed
//     sprint. (When the sprint was trashed too, the trash restores it first,
//     in the same transaction.)
//   - Restoring a sprint must lock the sprint row itself (FOR UPDATE) and,
//     for the tasks it brings back, their rows, so that a concurrent edit or
//     delete of one of them does not interleave with the restore.
//   - Purging a target must lock the row it deletes (DELETE does), and
//     purging a sprint must find its tasks under that lock, so a task
//     restored into it concurrently is not orphaned.
//
// SQLite has no FOR SHARE or FOR UPDATE (leave the clause out there): every
// write transaction holds the database's write lock, so these races cannot
// happen on it. Take host locks in one order too: the trash has locked its
// counter and entry rows before it calls the Restorer, so host transactions
// that call Add should do so before locking their own rows (see Trash.Add).
type Restorer interface {
	Restore(ctx context.Context, tx bun.Tx, e Entry) error
	Purge(ctx context.Context, tx bun.Tx, e Entry) error
}

// BatchRestorer is an optional capability of a Restorer: restore many
// entries in one call. Sprints come in a batch before their tasks.
type BatchRestorer interface {
	RestoreBatch(ctx context.Context, tx bun.Tx, es []Entry) error
}

// BatchPurger is an optional capability of a Restorer: purge many entries in
// one call. Tasks of a sprint come before the sprint.
type BatchPurger interface {
	PurgeBatch(ctx context.Context, tx bun.Tx, es []Entry) error
}

// Authorizer tells whether a principal may manage a whole project's trash.
// Without one only admin principals may. A principal who may not manage the
// project may still restore and clear the entries they deleted or created.
// An error it returns aborts the operation and is passed on.
//
// The trash asks it before it opens a transaction or takes a lock, so it may
// do I/O (a directory, a remote policy service) without holding up writers.
// An Authorizer that also implements ProjectViewer restricts reads too.
type Authorizer interface {
	CanManageProject(ctx context.Context, p deskkit.Principal, projectID int64) (bool, error)
}

// ProjectViewer is an optional capability of an Authorizer, discovered by
// type assertion: it says which projects of the tenant a principal may see.
// To a principal, the trash of a project they may not see does not exist:
// Search and Count of it, and Get, Restore, Clear, RestoreAll and ClearAll
// of its entries, return ErrNotFound; a search across projects covers only
// the visible ones (in SQL, totals included). Admins see every project and
// the viewer is not asked for them. Without a ProjectViewer, every user of a
// tenant sees every project of it.
//
// Like CanManageProject, VisibleProjects is asked before any transaction,
// once per call of the trash; an error it returns is passed on.
type ProjectViewer interface {
	VisibleProjects(ctx context.Context, p deskkit.Principal) (ProjectScope, error)
}

// ProjectScope is a set of projects of a tenant: all of them, or the listed
// ones. The zero value is the empty set.
type ProjectScope struct {
	All bool    // every project; IDs is ignored
	IDs []int64 // otherwise exactly these
}

// Contains reports whether project id is in s.
func (s ProjectScope) Contains(id int64) bool { return s.All || slices.Contains(s.IDs, id) }

// UserResolver looks up how users are shown in search results and named
// as the actor of events, in the shape every service shares
// (deskkit.UserInfo). It is called once per non-empty page with every
// distinct deleter id of the page (and creator id, for InfoScope
// InfoDetail), and once per change the trash publishes an event of, with
// the actor's id; ids it does not return are shown with empty name and
// avatar. An error it returns fails the search or the change and is passed
// on.
//
// db is what to query through: the transaction that Add was handed (the
// host's own), or the trash's database outside any transaction; for a
// search or a Get with Config.ReadDB set, the pool that read the entries,
// which may be the standby. Inside a
// transaction, that transaction holds a connection of the pool, and a
// resolver that asked the pool for another would wait for one that may
// never come free (with a pool of one, never): a resolver that reads the
// trash's database reads through db. A resolver whose users live
// elsewhere (another database, a service) may ignore it.
type UserResolver interface {
	ResolveUsers(ctx context.Context, db bun.IDB, tenantID int64, ids []int64) (map[int64]deskkit.UserInfo, error)
}
