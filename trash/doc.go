// Package trash is the recycle bin of deleted tasks and sprints.
//
// # Overview
//
// The host application owns its tasks and sprints; the trash owns only the
// entries that stand for them while they are deleted. An entry records the
// project, the target (type TASK or TASK_SPRINT, and the host's id), its
// name, the sprint a task belonged to, who created the target and who
// deleted it, and when. There is at most one entry per target of a tenant.
// A sprint and the tasks in it belong to one project.
//
//   - Add puts a target in the trash. Call it with the host's own delete
//     transaction, so that the delete and the entry commit together.
//   - Restore takes an entry out and brings its target back through the
//     host's Restorer. A task whose sprint is in the trash too brings the
//     sprint back first. A restored sprint brings back what the host decides
//     (normally the tasks deleted with it); tasks trashed on their own stay.
//   - Clear removes an entry for good and purges its target through the
//     Restorer. Clearing a sprint clears the entries of its tasks first.
//   - RestoreAll and ClearAll do the same for a whole project, sprints before
//     tasks when restoring, in batches of Config.BatchSize entries, each
//     batch its own transaction: 100,000 entries never sit under one lock.
//     When the sprints (or, clearing, the tasks) leave room in a batch, the
//     tasks (the sprints) fill it, so a project of at most BatchSize
//     entries is one transaction. On an error, the batches before it stay
//     done.
//   - Count, Search and Get read the trash of the principal's tenant; Get
//     returns one entry with the names and avatars of InfoDetail.
//   - PurgeExpired purges entries older than Config.Retention, across
//     tenants, safely from several replicas at once; run it on a timer.
//
// Every restore and clear runs the Restorer and the trash change in one
// transaction: if the Restorer fails, nothing changes. Of two concurrent
// operations on one entry, exactly one wins; the other gets ErrNotFound.
//
// The host plugs in through small interfaces: Restorer (required),
// Authorizer and its optional ProjectViewer capability, and UserResolver,
// which returns the shared deskkit.UserInfo. Migrate creates the tables.
//
// The package's Example (example_test.go) puts a task in the trash in the
// host's transaction, finds it, and restores it through the host's
// Restorer; ExampleProjectViewer hides the projects a user may not see.
//
// # Who may
//
// An admin principal, or one the Authorizer lets manage the project, may
// restore and clear any entry of the project. Anyone else may restore or
// clear only entries they deleted or created (ErrForbidden otherwise), and
// RestoreAll and ClearAll act on just those entries. Allowed and
// ProjectRights answer by that rule before acting, so a page offers only
// what it may (Projects lists the projects with entries, for a picker).
//
// Cascades follow the same rule, with one deliberate exception:
//
//   - Restoring a task also restores its trashed sprint, even one the
//     caller did not delete and could not restore alone: a task cannot come
//     back into a sprint that stays deleted, and bringing a sprint back
//     destroys nothing (whoever deleted it can delete it again).
//   - Clearing a sprint would purge the entries of its tasks, which cannot
//     be undone, so it never purges one the caller could not clear by
//     itself: Clear refuses with an ErrForbidden whose client message says
//     "sprint 5 holds trashed tasks you may not clear", and changes nothing.
//     ClearAll refuses the same way, before its first batch and again in
//     each batch's transaction (see ClearAll).
//
// Who may see: by default every user of a tenant may search and count every
// project of it. A host with private projects makes its Authorizer a
// ProjectViewer too; then a project the principal may not see does not
// exist for them: every operation on it or its entries returns ErrNotFound
// (not ErrForbidden, which would confirm it exists), and a search across
// projects covers the visible ones only. The restriction is part of the SQL,
// for the page and for the totals alike; pages are never filtered
// afterwards. Admins see every project.
//
// # Hooks and transactions
//
// The trash follows the transaction rules of package deskkit. The hooks
// that decide (the Authorizer, the ProjectViewer) and the UserResolver are
// asked before the trash opens a transaction or takes a lock, so they may
// do I/O without holding up writers. This is safe because entries are only
// inserted and deleted and never move between projects: the trash reads
// the entry, decides, and then takes it by id and tenant inside the
// transaction, answering ErrNotFound if it vanished meanwhile. The Restorer
// runs inside the transaction, since it must commit with the entry, and
// does database work through it and nothing else (see Restorer). Add runs
// in the host's transaction, and hands the UserResolver that transaction to
// read through (see UserResolver). The publisher writes its rows through
// the transaction too. A pool of one connection serves every operation.
//
// # Events
//
// With Config.Publisher set, the trash publishes a deskkit.Event for every
// change it makes (EventTypes lists them, with their data, titles and
// texts):
//
//   - task.trashed, sprint.trashed: Add.
//   - task.restored, sprint.restored: Restore. A task that brings its
//     trashed sprint back names it in alsoRestored; there is no separate
//     sprint.restored for that sprint. The tasks a restored sprint brings
//     back are the host's (Restorer), and no event of the trash's.
//   - task.cleared, sprint.cleared: Clear. A cleared sprint lists the task
//     entries cleared with it in alsoCleared; they get no task.cleared.
//   - trash.restored, trash.cleared: RestoreAll, ClearAll. One event per
//     call, never one per entry, with the total count, published in the
//     transaction of the call's last batch; none when it took nothing.
//   - trash.purged: PurgeExpired, one event per project it purged entries
//     of, published in the transaction of the run's last batch (runs on a
//     timer usually have one batch). Each replica's run announces what that
//     run purged.
//
// An event is published through the transaction of the change it announces
// (Add: the host's, the db it is given, or one of its own when that is a
// plain *bun.DB), so a change rolled back, by the host, the Restorer or a
// deadlock, publishes nothing, and a committed one is announced even if the
// process dies at once. An error of the publisher fails the operation,
// wrapped, and rolls back everything in that transaction. When a batch job
// fails after some batches committed, it publishes its event for those,
// with their count, in a transaction of its own (so that the channels learn
// of what changed), and returns the error; if that publishing fails too,
// both errors are returned (errors.Join) and those batches go unannounced.
// A job of at most Config.BatchSize entries is one transaction: all or
// nothing.
//
// # Search
//
// Search takes a typed Query: filter values are Go values of the key's kind
// (KeyKind), never text to parse. Query says how names, dates, filters and
// ordering are matched, and Filter what each key takes:
//
//	q := trash.Query{
//		TargetType: trash.TargetTask,
//		Filters: []trash.Filter{
//			{Key: "deletedDate", Op: trash.OpGreaterThanEqual, Value: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)},
//			{Key: "sprintId", Op: trash.OpIn, Value: []int64{10, 11}},
//			{Key: "targetName", Op: trash.OpMatch, Value: "login"},
//		},
//	}
//
// # Lock order
//
// On PostgreSQL every transaction of the trash that removes entries takes
// its locks in this order:
//
//  1. the counter rows (see Migrate) of every project it touches, in
//     primary-key order (tenant_id, target_type, project_id), so TASK
//     before TASK_SPRINT, created (with 0) if missing so that none appears
//     later out of order;
//  2. entry rows, sprint entries before task entries (retention takes a
//     batch of both types in one statement: under the counter locks the
//     order of entry rows no longer decides anything);
//  3. the host's rows, through the Restorer.
//
// Because every change to a project's entries also locks one of its counter
// rows (Add included), transactions that remove entries of one project run
// one after the other: restore and clear in one project cannot deadlock,
// whatever entries they touch; they queue per project, and are short. A
// host transaction that calls Add should call it before it locks its own
// rows (step 1 before step 3), and add tasks before sprints when it adds
// both. Every transaction of the trash runs through deskkit.RunInTx (a
// bounded retry on deadlock and serialization failure), for what the order
// cannot rule out (a host taking locks the other way round).
// Batch jobs read a batch under the project's counter locks; retention,
// which spans projects, reads its batch, then locks the batch's projects
// in order, then takes the entries still there, so replicas running it at
// once purge each entry once.
//
// On SQLite there is one writer at a time and no counter locking: open the
// database as package deskkit says (IMMEDIATE transactions, a busy timeout,
// WAL, foreign keys), so writers queue instead of failing half-way.
//
// # Errors
//
// Methods return ErrNotFound (no such entry or project in the tenant, or
// one the principal may not see), ErrForbidden (plain, or a
// *deskkit.Error that also matches it and whose ClientMessage says which
// sprint holds which tasks), ErrConflict (Add of a target in the trash
// already), ErrUnauthenticated (an invalid principal), and
// *deskkit.InputError (errors.Is(err, ErrInvalid)) naming the field and the
// rule it breaks. Errors from the Restorer, Authorizer, ProjectViewer and
// UserResolver are returned wrapped; database errors wrapped too, after a
// transaction that kept losing deadlocks has been tried
// deskkit.MaxTxAttempts times.
//
// Config.MeterProvider and Config.TracerProvider record a span per
// operation and the counter deskkit.trash.operations (see Config).
// examples/server/README.md (Trash and verification in detail) gives the
// search's costs on a million entries and what the trash needs of
// PostgreSQL's autovacuum.
//
// # Testing
//
// deskkit's tests run every operation of the trash, its events and its
// races against SQLite and PostgreSQL. A host tests its side with package
// trashtest: a Restorer whose methods are function fields, and
// RunRestorerTests, the conformance suite its own Restorer should pass over
// its real tables (restore, clear, restore-all and clear-all, sprints with
// their tasks, and a rollback undoing what the Restorer did).
// examples/embed and the reference server run it against theirs.
package trash
