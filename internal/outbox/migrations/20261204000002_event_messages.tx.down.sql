ALTER TABLE deskkit_outbox_events DROP COLUMN messages;
