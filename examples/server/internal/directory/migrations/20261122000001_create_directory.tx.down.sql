DROP TABLE deskkit_tokens;
--bun:split
DROP TABLE deskkit_users;
--bun:split
DROP TABLE deskkit_tenants;
