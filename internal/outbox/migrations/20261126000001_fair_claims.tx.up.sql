-- Fair claims: a claim takes due deliveries target by target (a target is
-- a channel, or a notice's user), each target's in due order, tenants and
-- targets in turn. The index below replaces deskkit_outbox_due_idx: its
-- (tenant_id, target_id) prefix lets a claim step from target to target
-- with one probe each, and its due_at_ms suffix read each target's due rows
-- in order.
CREATE INDEX deskkit_outbox_target_due_idx ON deskkit_outbox_deliveries (kind, tenant_id, target_id, due_at_ms) WHERE status = 'PENDING';
--bun:split
DROP INDEX deskkit_outbox_due_idx;
--bun:split
-- The deliveries in flight (leased): a claim counts a target's, to cap how
-- many are in flight per target across every worker. Only leased rows are
-- in it, so its size is what is in flight, not the queue's.
CREATE INDEX deskkit_outbox_leased_idx ON deskkit_outbox_deliveries (kind, tenant_id, target_id) WHERE lease_token IS NOT NULL;
