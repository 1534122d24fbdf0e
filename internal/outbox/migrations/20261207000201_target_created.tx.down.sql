CREATE INDEX deskkit_outbox_target_idx ON deskkit_outbox_deliveries (tenant_id, kind, target_id, id);
--bun:split
DROP INDEX deskkit_outbox_target_created_idx;
--bun:split
DROP INDEX deskkit_outbox_leased_idx;
--bun:split
CREATE INDEX deskkit_outbox_leased_idx ON deskkit_outbox_deliveries (kind, tenant_id, target_id) WHERE lease_token IS NOT NULL;
