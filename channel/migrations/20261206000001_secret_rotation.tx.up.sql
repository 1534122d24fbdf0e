-- A webhook's signing secret can be rotated (issue 32): the new secret
-- takes over at once (secret_enc), and the one it replaced keeps signing
-- beside it until previous_secret_until_ms (Unix ms), so that receivers
-- have an overlap in which to move to the new one. previous_secret_enc is
-- sealed as secret_enc is, under the server secret, bound to the row's
-- tenant, type and its own field ("previous-secret"), so that it cannot
-- be copied into secret_enc. Both are NULL when no overlap runs; an
-- overlap that has ended is cleared by the channel's next write and by
-- Purge.
--
-- A webhook may sign with an ed25519 key (Standard Webhooks' "v1a"
-- signatures) instead of its HMAC secret or beside it: ed25519_key_enc is
-- the signing key, sealed (field "ed25519-key"), never shown;
-- ed25519_public_key its public key ("whpk_..."), in clear, which the
-- channel's answers show; previous_ed25519_key_enc the key a rotation
-- replaced, signing until previous_secret_until_ms as previous_secret_enc
-- does. signing says what signs: NULL for the HMAC secret alone (every
-- webhook before), "ed25519" for the key alone (secret_enc is NULL then),
-- "hmac+ed25519" for both.
ALTER TABLE deskkit_channels ADD COLUMN previous_secret_enc TEXT;
--bun:split
ALTER TABLE deskkit_channels ADD COLUMN previous_secret_until_ms BIGINT;
--bun:split
ALTER TABLE deskkit_channels ADD COLUMN ed25519_key_enc TEXT;
--bun:split
ALTER TABLE deskkit_channels ADD COLUMN ed25519_public_key VARCHAR(100);
--bun:split
ALTER TABLE deskkit_channels ADD COLUMN previous_ed25519_key_enc TEXT;
--bun:split
ALTER TABLE deskkit_channels ADD COLUMN signing VARCHAR(16);
