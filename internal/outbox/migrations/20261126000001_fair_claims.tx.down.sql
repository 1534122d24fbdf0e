DROP INDEX deskkit_outbox_leased_idx;
--bun:split
CREATE INDEX deskkit_outbox_due_idx ON deskkit_outbox_deliveries (kind, due_at_ms) WHERE status = 'PENDING';
--bun:split
DROP INDEX deskkit_outbox_target_due_idx;
