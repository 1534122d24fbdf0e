ALTER TABLE deskkit_channels DROP COLUMN disabled_reason_json;
