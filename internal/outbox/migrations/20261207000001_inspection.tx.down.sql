DROP TABLE deskkit_outbox_bodies;
--bun:split
ALTER TABLE deskkit_outbox_attempts DROP COLUMN exchange;
