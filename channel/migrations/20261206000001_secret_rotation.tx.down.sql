ALTER TABLE deskkit_channels DROP COLUMN previous_secret_until_ms;
--bun:split
ALTER TABLE deskkit_channels DROP COLUMN previous_secret_enc;
