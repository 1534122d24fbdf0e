-- The time zones people read times in: a user's and a tenant's IANA time
-- zone names ("Asia/Shanghai"); '' is none. The console shows times in
-- the user's zone, else the tenant's, else the one its reader picked.
ALTER TABLE deskkit_users ADD COLUMN time_zone VARCHAR(64) NOT NULL DEFAULT '';
--bun:split
ALTER TABLE deskkit_tenants ADD COLUMN time_zone VARCHAR(64) NOT NULL DEFAULT '';
