ALTER TABLE deskkit_outbox_attempts DROP COLUMN error_json;
--bun:split
ALTER TABLE deskkit_outbox_deliveries DROP COLUMN last_error_json;
