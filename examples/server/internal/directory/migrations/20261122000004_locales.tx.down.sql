ALTER TABLE deskkit_tenants DROP COLUMN locale;
--bun:split
ALTER TABLE deskkit_users DROP COLUMN locale;
