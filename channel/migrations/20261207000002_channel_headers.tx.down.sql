ALTER TABLE deskkit_channels DROP COLUMN headers_enc;
