ALTER TABLE deskkit_channels DROP COLUMN last_failure_error_json;
--bun:split
ALTER TABLE deskkit_channels DROP COLUMN last_failure_error;
--bun:split
ALTER TABLE deskkit_channels DROP COLUMN last_failure_status;
--bun:split
ALTER TABLE deskkit_channels DROP COLUMN failing_event_ms;
--bun:split
ALTER TABLE deskkit_channels DROP COLUMN disabled_by;
