DROP TABLE deskkit_console_portal_links;
--bun:split
ALTER TABLE deskkit_console_sessions DROP COLUMN tenant_name;
--bun:split
ALTER TABLE deskkit_console_sessions DROP COLUMN user_name;
--bun:split
ALTER TABLE deskkit_console_sessions DROP COLUMN scopes;
--bun:split
ALTER TABLE deskkit_console_sessions DROP COLUMN admin;
