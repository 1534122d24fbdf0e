-- Events reach channels through the outbox (internal/outbox): a channel
-- can be disabled, subscribes to some event types, and keeps the clock of
-- its failures.
--
-- enabled: a disabled channel gets no new deliveries; disabled_reason and
-- disabled_at_ms say why and when (NULL while enabled).
-- events: the subscription, a JSON array of event types and prefixes
-- ending in ".*"; NULL means every event.
-- failing_since_ms: when the first of the channel's failed attempts since
-- its last success happened (NULL after a success); failed_attempts counts
-- them. A channel failing for Config.DisableAfter with at least
-- Config.DisableMinFailures failed attempts is disabled.
ALTER TABLE deskkit_channels ADD COLUMN enabled BOOLEAN NOT NULL DEFAULT TRUE;
--bun:split
ALTER TABLE deskkit_channels ADD COLUMN events TEXT;
--bun:split
ALTER TABLE deskkit_channels ADD COLUMN disabled_reason TEXT;
--bun:split
ALTER TABLE deskkit_channels ADD COLUMN disabled_at_ms BIGINT;
--bun:split
ALTER TABLE deskkit_channels ADD COLUMN failing_since_ms BIGINT;
--bun:split
ALTER TABLE deskkit_channels ADD COLUMN failed_attempts INTEGER NOT NULL DEFAULT 0;
