// Package trash is the recycle bin of deleted tasks and sprints.
//
// # Overview
//
// The host application owns its tasks and sprints; the trash owns only the
// entries that stand for them while they are deleted. An entry records the
// project, the target (type TASK or TASK_SPRINT, and the host's id), its
// name, the sprint a task belonged to, who created the target and who
// deleted it, and when. There is at most one entry per target of a tenant.
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
//     On an error, the batches before it stay done.
//   - Count and Search read the trash of the principal's tenant.
//   - PurgeExpired purges entries older than Config.Retention, across
//     tenants, safely from several replicas at once; run it on a timer.
//
// Every restore and clear runs the Restorer and the trash change in one
// transaction: if the Restorer fails, nothing changes. Of two concurrent
// operations on one entry, exactly one wins; the other gets ErrNotFound.
//
// # Who may
//
// An admin principal, or one the Authorizer lets manage the project, may
// restore and clear any entry of the project. Anyone else may restore or
// clear only entries they deleted or created (ErrForbidden otherwise), and
// RestoreAll and ClearAll act on just those entries. Restoring a task you
// may restore also restores its trashed sprint, and clearing a sprint you
// may clear also clears its tasks' entries: neither would make sense
// without the other. Any user of the tenant may search and count its trash.
//
// # Search
//
// ParseQuery reads the HTTP API's query parameters into a Query; Search
// validates it and runs it. Choices the API specification leaves open:
//
//   - targetName (top level) and the MATCH family of filter ops are
//     case-insensitive substring (MATCH, NOT_MATCH) or prefix (MATCH_END,
//     NOT_MATCH_END) matches. Case is folded with Go's Unicode rules into a
//     stored column, the same on PostgreSQL and SQLite. %, _ and \ match
//     themselves. EQUAL and IN on targetName compare exactly.
//   - Other top-level parameters are equality filters. Deletion dates are
//     kept to the second; dates are read as RFC 3339 or
//     "yyyy-MM-dd HH:mm:ss" in UTC, so deletedDate=2026-11-01 09:30:00 finds
//     entries deleted during that second.
//   - filters[0] to filters[2] are ANDed. Comparisons (GREATER_THAN, ...)
//     apply to numbers and dates; IS_NULL and IS_NOT_NULL to sprintId, the
//     only key that can be empty; NOT_EQUAL and NOT_IN on sprintId also
//     match entries without a sprint. IN and NOT_IN take at most
//     MaxInValues comma-separated values, brackets allowed.
//   - Results are ordered by id, deletedDate or targetName (default id,
//     DESC), ties broken by id, so pages never overlap.
//   - Unknown parameters, repeated parameters and a filter index above 2 are
//     errors, not ignored, so a misspelt filter never silently matches all.
//   - InfoDetail adds names and avatars of creator and deleter through the
//     UserResolver, one call per page.
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
// deskkit_trash_counts holds the number of entries per tenant, target type
// and project, kept exact by triggers on deskkit_trash, so that any writer
// (Add in a host transaction, the batch jobs, a bulk load with plain
// INSERTs) keeps it right. Counts and the totals of searches that filter by
// type and project only read it instead of counting rows: a tenant-wide
// total over a million entries costs a few hundred counter rows. The price
// is that two transactions adding or removing entries of one project queue
// on that project's counter row until the first commits; keep delete
// transactions short. Rows never move between tenants, projects or types
// (a trigger refuses it); other columns may be updated. The same statements
// serve PostgreSQL and SQLite; the few differences sit side by side in the
// migration template, and batch jobs use FOR UPDATE SKIP LOCKED on
// PostgreSQL only. On SQLite, open the database with IMMEDIATE transactions
// and a busy timeout (internal/database does), so concurrent writers queue.
//
// # Errors
//
// Methods return ErrNotFound, ErrForbidden, ErrConflict (Add of a target in
// the trash already), ErrUnauthenticated (an invalid principal), and
// *deskkit.InputError (errors.Is(err, ErrInvalid)) naming the field and the
// rule it breaks. Errors from the Restorer, Authorizer and UserResolver are
// returned wrapped.
//
// # Testing
//
// The tests run one conformance suite against SQLite and PostgreSQL (see
// internal/dbtest), and FuzzSearchQuery fuzzes the query parser through a
// real search:
//
//	go test ./trash -run '^$' -fuzz FuzzSearchQuery
package trash
