DROP TABLE deskkit_console_limits;
--bun:split
DROP TABLE deskkit_console_links;
--bun:split
DROP TABLE deskkit_console_sessions;
