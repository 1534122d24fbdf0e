ALTER TABLE deskkit_console_sessions DROP COLUMN return_url;
