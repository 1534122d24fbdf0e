ALTER TABLE deskkit_channels DROP COLUMN version;
