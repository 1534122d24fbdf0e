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
// which returns the shared deskkit.UserInfo.
//
// The package's Example puts a task in the trash in the host's
// transaction, finds it, and restores it through the host's Restorer;
// ExampleProjectViewer hides the projects a user may not see. The rules
// follow.
//
// # Who may
//
// An admin principal, or one the Authorizer lets manage the project, may
// restore and clear any entry of the project. Anyone else may restore or
// clear only entries they deleted or created (ErrForbidden otherwise), and
// RestoreAll and ClearAll act on just those entries.
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
//     ClearAll refuses the same way, before its first batch, when one of the
//     caller's sprints holds such a task; each batch checks again inside its
//     transaction, so a task trashed meanwhile is not purged either (the
//     batches before such a late refusal stay done).
//
// Who may see: by default every user of a tenant may search and count every
// project of it. A host with private projects makes its Authorizer a
// ProjectViewer too; then a project the principal may not see does not
// exist for them: Search and Count of it, and Get, Restore, Clear,
// RestoreAll and ClearAll of it or its entries, return ErrNotFound (not
// ErrForbidden, which would confirm it exists), and a search across
// projects covers the visible ones only. The restriction is part of the SQL
// (project_id IN the visible list, for the page and for the totals from the
// counts table alike); pages are never filtered afterwards. Admins see
// every project.
//
// Hooks that decide (the Authorizer, the ProjectViewer) are asked before the
// trash opens a transaction or takes a lock: they may do I/O without
// holding up writers (on SQLite, every writer of the database). This is
// safe because entries are only inserted and deleted and never move between
// projects (a trigger refuses it): the trash reads the entry, decides, and
// then takes it by id and tenant inside the transaction, answering
// ErrNotFound if it vanished meanwhile.
//
// Hooks that send (mail, SMS, webhooks) never run inside a transaction. The
// Restorer necessarily runs inside one, since it must commit with the
// entry: it does database work through the transaction it is given and
// nothing else (see Restorer). What must be announced after a commit is
// written as a row in the transaction and sent after it: the trash's events
// go through Config.Publisher, which only writes rows (see Events).
//
// # Events
//
// With Config.Publisher set, the trash publishes a deskkit.Event for every
// change it makes (EventTypes lists them, with examples, for the registry
// of event types):
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
//     of, published in the transaction of the run's last batch (where the
//     run's last entries are purged: runs on a timer usually have one
//     batch). Each replica's run announces what that run purged.
//
// The transaction rule: an event is published through the transaction of
// the change it announces (Add: the host's, the db it is given, or one of
// its own when that is a plain *bun.DB), so a change
// rolled back, by the host, the Restorer or a deadlock, publishes nothing,
// and a committed one is announced even if the process dies at once. An
// error of the publisher fails the operation, wrapped, and rolls it back
// with everything else in that transaction. Batch jobs keep their rule that
// the batches before an error stay done: when a job fails after some
// batches committed, it publishes its event for those, with their count, in
// a transaction of its own (so that the channels learn of what changed) and
// returns the error; if that publishing fails too, both errors are returned
// (errors.Join) and those batches go unannounced. A job of at most
// Config.BatchSize entries is one transaction: all or nothing.
//
// Every event gets a new id (deskkit.NewEventID) and the trash's clock as
// its time. The publisher receives the tenant as an argument and puts
// "tenantId" into the data itself; the trash's data have no such key.
// Data are JSON objects of typed structs, the same types as the examples
// of EventTypes:
//
//   - EntryEventData (the trashed events): actor, projectId, trashId (the
//     entry's id), targetType, targetId, targetName;
//   - RestoredEventData: the same and alsoRestored, an EventTarget
//     (trashId, targetType, targetId, targetName) or null;
//   - ClearedEventData: the same and alsoCleared, a list of EventTarget,
//     empty when nothing went with the entry;
//   - ProjectEventData (trash.restored, trash.cleared, trash.purged):
//     actor, projectId, count (entries that left the trash, those taken
//     with others included: what the call returns), and for trash.purged
//     retentionSeconds, the retention period its text states.
//
// actor is the principal as {"id", "name"}, the name from Config.Users (""
// without one, or for a user it does not know), and null for trash.purged,
// which nobody caused. The name is asked once per call, before the
// transaction (Add: before its insert, inside the host's transaction,
// which it hands the resolver to read through; see Transactions), and only
// when there is a publisher; an error from Config.Users then fails the
// operation, as it fails a search.
//
// Title and Text are short sentences in English, such as `Task "Fix login"
// moved to the trash` and `Ada moved task "Fix login" of project 3 to the
// trash.`, naming the actor ("User 7" when the name is unknown or holds
// control characters) and the project by id (the trash knows no project
// names). Robots render them as markdown and e-mail shows them as plain
// text. Names are typed by users and may hold markdown, so each name is
// quoted and the characters that start inline markdown (\ ` * _ ~ [ ] < >
// &) are escaped with a backslash: a robot shows the name as typed, never
// a link, emphasis or HTML of the user's making, and an e-mail shows the
// backslashes, the price of one text for both. Names cannot break lines
// (deskkit.CheckName), so nothing in them can start a heading or a list. A
// bare URL in a name may still be shown as a link by a robot that links
// URLs; it links where it says. Titles cut names to 60 characters ("…"), so
// that every title keeps within deskkit.Event's 200; texts carry names
// whole. The data carry every name as it is.
//
// The cost: BenchmarkAddPublishing compares Add with a publisher that
// writes one row against Add without a publisher.
//
// # Search
//
// Search takes a typed Query, validates it and runs it. Filter values are
// Go values of the key's kind (KeyKind): int64 for ids, time.Time for
// deletedDate, string for targetName, TargetType for targetType, a slice of
// those for IN and NOT_IN, nil for IS_NULL and IS_NOT_NULL; the trash parses
// no text. Query.Validate checks a query without running it. The HTTP query
// syntax (filters[n].key, list spellings, dates as text) is parsed by the
// httpapi package, which builds the Query:
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
// Choices the API specification leaves open:
//
//   - Query.TargetName and the MATCH family of filter ops are
//     case-insensitive substring (MATCH, NOT_MATCH) or prefix (MATCH_END,
//     NOT_MATCH_END) matches. Case is folded with Go's Unicode rules into a
//     stored column (FoldName), the same on PostgreSQL and SQLite. %, _ and
//     \ match themselves. EQUAL and IN on targetName compare exactly. A term
//     no name can contain (invalid UTF-8, control characters) is an input
//     error.
//   - Deletion dates are kept to the second, and dates in a query are cut
//     to the second in UTC: Query.DeletedDate 2026-11-01 09:30:00.7 finds
//     entries deleted during that second. Years outside 1 to 9999 in UTC
//     are input errors.
//   - Filters (at most MaxFilters) are ANDed. Comparisons (GREATER_THAN,
//     ...) apply to numbers and dates; IS_NULL and IS_NOT_NULL to sprintId,
//     the only key that can be empty; NOT_EQUAL and NOT_IN on sprintId also
//     match entries without a sprint. IN and NOT_IN take 1 to MaxInValues
//     values. A value of the wrong Go type is an input error naming
//     filters[n].value and the type wanted.
//   - Results are ordered by id, deletedDate or targetName (default id,
//     DESC), ties broken by id, so pages never overlap.
//   - Every result carries deletedBy (the user id), deletedByName (through
//     the UserResolver, one call per page, after the queries; "" without a
//     resolver or for a user it does not know) and purgeDate (deletedDate
//     plus Config.Retention, computed when read so that a changed retention
//     applies at once; null without retention). InfoDetail adds the
//     creator's name and both avatars in the same call.
//
// A search uses at most one database connection at a time, so that with a
// bounded pool N concurrent searches cannot each hold one connection while
// waiting for a second. It reads the page first (a deferred join: ids from
// an index, then the page's rows), then the total: a page shorter than the
// page size tells the total by itself (no second query, which makes rare
// names one statement); otherwise the counts table answers when the query
// filters by type and project only, and a count of the matching rows
// answers the rest. The two run one after the other rather than in one
// statement (a window count) because a window count must read and sort
// every match before it can return the first ten, while the page alone
// stops after ten: for a common name the page adds a few milliseconds to
// the count it needs anyway (measured through HTTP on a million entries:
// about 140 ms for ~100,000 matches, as when the two ran concurrently).
//
// The trash relies on PostgreSQL's autovacuum (on by default). Without it,
// rows deleted in bulk leave dead index entries behind: batch jobs step over
// them (each batch continues after the last id taken), but the planner still
// walks them when it probes the id range, and searches slow from one
// millisecond to ten after a million deletions.
//
// On PostgreSQL, substring search uses a trigram index. A term made of
// trigrams that nearly every name shares (a word all names start with)
// makes the index read long posting lists: tens of milliseconds on a million
// entries once cached. Distinctive terms answer in about a millisecond.
//
// User input reaches SQL only as bound values of bun's placeholders; keys,
// ops and order fields are looked up in fixed tables.
//
// # Storage
//
// Migrate creates deskkit_trash and its indexes (on PostgreSQL also a
// pg_trgm trigram index for substring search, creating the extension if
// needed) under the deskkit_trash_migrations table.
//
// Names: Add accepts a TargetName that deskkit.CheckName accepts (valid
// UTF-8, not blank, no control characters, no bidirectional embeddings,
// overrides or isolates, at most MaxNameLength characters; emoji sequences
// joined by U+200D stay valid), the rule every deskkit service and the reference host share,
// so that what Add accepts is exactly what Get returns on both databases.
//
// deskkit_trash_counts holds the number of entries per tenant, target type
// and project, kept exact by triggers on deskkit_trash, so that any writer
// (Add in a host transaction, the batch jobs, a bulk load with plain
// INSERTs) keeps it right. Counts and the totals of searches that filter by
// type and project only read it instead of counting rows: a tenant-wide
// total over a million entries costs a few hundred counter rows. Rows never
// move between tenants, projects or types (a trigger refuses it); only
// target_name may be changed in place.
//
// Lock order. On PostgreSQL every transaction of the trash that removes
// entries takes its locks in this order:
//
//  1. the counter rows of every project it touches, in primary-key order
//     (tenant_id, target_type, project_id), so TASK before TASK_SPRINT,
//     created (with 0) if missing so that none appears later out of order;
//  2. entry rows, sprint entries before task entries (retention takes a
//     batch of both types in one statement: under the counter locks the
//     order of entry rows no longer decides anything, see below);
//  3. the host's rows, through the Restorer.
//
// Because every change to a project's entries also locks one of its counter
// rows (the triggers, Add included), transactions that remove entries of
// one project run one after the other: restore and clear in one project
// cannot deadlock, whatever entries they touch. The price is that they
// queue per project; they are short. A host transaction that calls Add
// should call it before it locks its own rows (step 1 before step 3), and
// add tasks before sprints when it adds both. Every transaction of the
// trash runs through a bounded retry on deadlock (40P01) and serialization
// failure (40001), for what the order cannot rule out (a host taking locks
// the other way round); what runs inside is database work through the
// transaction, so running it again is safe. Batch jobs read a batch under
// the project's counter locks; retention, which spans projects, reads its
// batch, then locks the batch's projects in order, then takes the entries
// still there, so replicas running it at once purge each entry once.
//
// The same statements serve PostgreSQL and SQLite; the few differences sit
// side by side in the migration templates. On SQLite there is one writer at
// a time and no counter locking: open the database with IMMEDIATE
// transactions, a busy timeout, WAL and foreign keys (the DSN in Example
// and in the deskkit package documentation), so writers queue instead of
// failing half-way.
//
// # Transactions
//
// No code path holds a connection of the pool (a transaction) while it
// asks the pool for another: a transaction's lookup through the pool waits
// for a second connection, which, with every connection held by a
// transaction doing the same (or with a pool of one), never comes. So:
//
//   - Restore, Clear, RestoreAll and ClearAll read the entry, ask the
//     Authorizer, the ProjectViewer and the UserResolver (the actor's
//     name, handed the trash's database) before their transaction begins;
//     in it, only the transaction is used, by the trash and by the
//     Restorer it hands the transaction to.
//   - Add runs in the host's transaction, which holds a connection: it
//     hands the UserResolver that transaction (db), and the resolver reads
//     through it, never through the pool. A host's resolver over another
//     store may ignore db.
//   - The Publisher gets the transaction too, and publishes through it.
//
// A pool of one connection serves every operation, one at a time (the
// reference server's TestPoolOfOne proves it for every route).
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
// deskkit.MaxTxAttempts times (deskkit.RunInTx).
//
// # Metrics and traces
//
// Config.MeterProvider and Config.TracerProvider (nil: the global
// providers, which record nothing until the host installs some) record,
// under the scope github.com/deskkit/deskkit/trash, a span per operation
// ("trash.Add", "trash.Search", "trash.RestoreAll", ...; status Error when
// it failed, with deskkit.result) and the counter deskkit.trash.operations
// with deskkit.operation (add, get, search, count, restore,
// restore_project, clear, clear_project, purge), deskkit.kind (task or
// sprint: the entry's type, or the searched type; "" for operations on a
// project and when the entry was not found) and deskkit.result ("ok", or
// the error key httpapi answers: resource_not_found, forbidden,
// param_validation_error, service_unavailable, internal_error...). The
// Restorer, Authorizer and UserResolver get the span's context, so that
// what they do is a child of the operation. TestTelemetry checks both with
// the SDK's ManualReader and SpanRecorder.
//
// # Testing
//
// The tests run one conformance suite (TestConformance) against SQLite and
// PostgreSQL from a single function (set
// DESKKIT_TEST_DATABASE_URL, and DESKKIT_REQUIRE_POSTGRES=1 to fail rather
// than skip without it). It includes races: restore against clear of
// neighbouring sprints and tasks in one project (a deadlock that load once found),
// restore against clear of one entry, and retention from two replicas.
// TestEvents runs the events against both databases with a publisher that
// writes a row through the transaction it is handed: every type's data,
// title and text, nothing left by a rollback or a refusing publisher, one
// event for a restore-all over several batches. The
// fuzz target of the search query syntax moved with the parser to httpapi
// (FuzzSearchQuery).
//
// A host tests its side with package trashtest: a Restorer whose methods
// are function fields, and RunRestorerTests, the conformance suite its own
// Restorer should pass over its real tables (restore, clear, restore-all
// and clear-all, sprints with their tasks, and a rollback undoing what the
// Restorer did). examples/embed and the reference server run it against
// theirs.
package trash
