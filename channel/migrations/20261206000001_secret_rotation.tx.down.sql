ALTER TABLE deskkit_channels DROP COLUMN signing;
--bun:split
ALTER TABLE deskkit_channels DROP COLUMN previous_ed25519_key_enc;
--bun:split
ALTER TABLE deskkit_channels DROP COLUMN ed25519_public_key;
--bun:split
ALTER TABLE deskkit_channels DROP COLUMN ed25519_key_enc;
--bun:split
ALTER TABLE deskkit_channels DROP COLUMN previous_secret_until_ms;
--bun:split
ALTER TABLE deskkit_channels DROP COLUMN previous_secret_enc;
