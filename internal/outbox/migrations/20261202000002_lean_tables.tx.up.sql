{{- if .Postgres}}
-- Storage parameters of the outbox's tables, so that they stay small under
-- churn whatever the server's defaults (autovacuum_vacuum_scale_factor 0.2:
-- a table is vacuumed once a fifth of it is dead, which for a delivery log
-- of a million rows is 200,000 dead row versions, each with its entries in
-- the pending index the claim reads).
--
-- Which updates a delivery row gets: a claim sets due_at_ms, lease_token
-- and attempts; an outcome sets status, step, due_at_ms, lease_token,
-- last_status_code, last_error, finished_at_ms (and payload). due_at_ms is
-- a column of deskkit_outbox_target_due_idx, status its predicate,
-- lease_token the predicate of deskkit_outbox_leased_idx and
-- finished_at_ms the column of deskkit_outbox_finished_idx: neither update
-- can be HOT (PostgreSQL makes an update HOT only when no indexed column and
-- no column of an index's predicate changes), so each leaves two dead
-- entries in the pending index for each delivery, the insert's and the
-- claim's, and one in every other index per update. What keeps the table
-- and its indexes small is therefore vacuuming by what churned, not by the
-- log's size, and always cleaning the indexes.
--
-- deskkit_outbox_deliveries:
--   autovacuum_vacuum_scale_factor 0, autovacuum_vacuum_threshold 10000:
--     vacuum after 10,000 dead versions (5,000 deliveries: a claim and an
--     outcome each) however large the log of finished rows is; autovacuum
--     looks at a database once per autovacuum_naptime (1 minute), so under
--     a steady drain the table is vacuumed once a minute. Vacuum skips the
--     pages the visibility map marks all-visible (finished rows vacuumed
--     before), so its heap work follows the churn.
--   vacuum_index_cleanup on: vacuum always removes the dead entries from
--     the indexes, the pending index above all; at its default (auto)
--     vacuum skips the indexes when fewer than 2 % of the table's pages
--     hold dead rows, which in a large log is exactly the churn of a drain.
--     Its cost: each vacuum reads every index of the table whole (a B-tree
--     vacuum is a full scan), the log's included, at most once a minute.
--   autovacuum_analyze_scale_factor 0, autovacuum_analyze_threshold 20000:
--     the statuses move in bulk (a drain turns its PENDING rows SUCCEEDED);
--     statistics 10,000 deliveries old at most, not a tenth of the log.
--   The insert thresholds stay PostgreSQL's: every delivery is updated
--     after its insert, so the dead-version threshold fires first.
--   The fillfactor stays 100: free room on a page serves HOT updates, and
--     there are none. Measured (examples/bench, churn scenario: three
--     drains of 20,000 on a private cluster), 0.0 % of the updates were
--     HOT at fillfactor 70 as at 100, and the table was 15 % larger at 70
--     (11.0 against 9.6 MB), with the same throughput.
-- deskkit_outbox_events and deskkit_outbox_attempts are written once and
-- deleted by age (Purge, retention), never updated:
--   autovacuum_vacuum_scale_factor 0.05: a purge deletes the oldest rows,
--     a day's worth at a time; their room is reused once vacuum saw them,
--     after 5 % of the table rather than 20 %.
--   autovacuum_vacuum_insert_scale_factor 0.05: an insert-only table is
--     vacuumed for its inserts (to mark its pages all-visible and freeze
--     them) every 5 % of growth rather than 20 %, so that no one vacuum has
--     a fifth of a large log to read and the anti-wraparound vacuum finds
--     the log mostly frozen.
ALTER TABLE deskkit_outbox_deliveries SET (
    autovacuum_vacuum_scale_factor = 0,
    autovacuum_vacuum_threshold = 10000,
    vacuum_index_cleanup = on,
    autovacuum_analyze_scale_factor = 0,
    autovacuum_analyze_threshold = 20000
);
--bun:split
ALTER TABLE deskkit_outbox_events SET (
    autovacuum_vacuum_scale_factor = 0.05,
    autovacuum_vacuum_insert_scale_factor = 0.05
);
--bun:split
ALTER TABLE deskkit_outbox_attempts SET (
    autovacuum_vacuum_scale_factor = 0.05,
    autovacuum_vacuum_insert_scale_factor = 0.05
);
{{- else}}
-- SQLite has no per-table vacuum settings: a deleted or updated row's
-- space is reused by the next writes to its page.
SELECT 1;
{{- end}}
