ALTER TABLE deskkit_tenants DROP COLUMN time_zone;
--bun:split
ALTER TABLE deskkit_users DROP COLUMN time_zone;
