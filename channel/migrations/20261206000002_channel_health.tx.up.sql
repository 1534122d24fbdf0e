-- A channel's health (issue 32): what List and Get show beside the
-- failure clock (failing_since_ms, failed_attempts).
--
-- disabled_by: the user who disabled the channel by hand; NULL while it is
-- enabled, when deskkit disabled it, and for channels disabled before.
-- failing_event_ms: when channel.failing was raised for the running
-- failure episode; NULL when none was. A flush sets it with a conditional
-- UPDATE (... AND failing_event_ms IS NULL) in its transaction, so that
-- replicas flushing at once raise the event once; a success, a disable
-- and an enable clear it, which ends the episode.
-- last_failure_status, last_failure_error, last_failure_error_json: the
-- status code (NULL without a reply) and error of the channel's last
-- failed attempt counted on the clock, its English and its key and
-- arguments (deskkit.Text's JSON), as the outbox keeps an attempt's error;
-- NULL before the first failure.
ALTER TABLE deskkit_channels ADD COLUMN disabled_by BIGINT;
--bun:split
ALTER TABLE deskkit_channels ADD COLUMN failing_event_ms BIGINT;
--bun:split
ALTER TABLE deskkit_channels ADD COLUMN last_failure_status INTEGER;
--bun:split
ALTER TABLE deskkit_channels ADD COLUMN last_failure_error TEXT;
--bun:split
ALTER TABLE deskkit_channels ADD COLUMN last_failure_error_json TEXT;
