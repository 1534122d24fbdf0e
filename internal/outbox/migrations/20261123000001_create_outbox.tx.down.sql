DROP TABLE deskkit_outbox_attempts;
--bun:split
DROP TABLE deskkit_outbox_deliveries;
--bun:split
DROP TABLE deskkit_outbox_events;
