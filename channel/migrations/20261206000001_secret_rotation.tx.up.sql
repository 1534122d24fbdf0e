-- A webhook's signing secret can be rotated (issue 32): the new secret
-- takes over at once (secret_enc), and the one it replaced keeps signing
-- beside it until previous_secret_until_ms (Unix ms), so that receivers
-- have an overlap in which to move to the new one. previous_secret_enc is
-- sealed as secret_enc is, under the server secret, bound to the row's
-- tenant, type and its own field ("previous-secret"), so that it cannot
-- be copied into secret_enc. Both are NULL when no overlap runs; an
-- overlap that has ended is cleared by the channel's next write and by
-- Purge.
ALTER TABLE deskkit_channels ADD COLUMN previous_secret_enc TEXT;
--bun:split
ALTER TABLE deskkit_channels ADD COLUMN previous_secret_until_ms BIGINT;
