-- A target's deliveries by creation time, newest first: the deliveries
-- API's list (ordered by created_at_ms, then id) and its from/to filter, a
-- recover's since, and the hourly and total counts, which read a range of
-- creation times. It replaces deskkit_outbox_target_idx (tenant_id, kind,
-- target_id, id), which served the list but made every range a walk of all
-- of a target's deliveries; one index for both, so that a delivery's
-- insert writes no more index entries than before. created_at_ms never
-- changes after the insert, so no update touches it.
CREATE INDEX deskkit_outbox_target_created_idx ON deskkit_outbox_deliveries (tenant_id, kind, target_id, created_at_ms, id);
--bun:split
DROP INDEX deskkit_outbox_target_idx;
--bun:split
-- The leases' partial index again, now the newest index of the table:
-- SQLite, without statistics, breaks a tie between indexes that match a
-- statement's equalities equally well for the one created last, and the
-- claim counts a target's leases through this one (a few rows: what is in
-- flight), not through the index above (every delivery of the target).
DROP INDEX deskkit_outbox_leased_idx;
--bun:split
CREATE INDEX deskkit_outbox_leased_idx ON deskkit_outbox_deliveries (kind, tenant_id, target_id) WHERE lease_token IS NOT NULL;
