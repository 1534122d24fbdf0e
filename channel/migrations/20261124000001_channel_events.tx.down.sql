ALTER TABLE deskkit_channels DROP COLUMN failed_attempts;
--bun:split
ALTER TABLE deskkit_channels DROP COLUMN failing_since_ms;
--bun:split
ALTER TABLE deskkit_channels DROP COLUMN disabled_at_ms;
--bun:split
ALTER TABLE deskkit_channels DROP COLUMN disabled_reason;
--bun:split
ALTER TABLE deskkit_channels DROP COLUMN events;
--bun:split
ALTER TABLE deskkit_channels DROP COLUMN enabled;
