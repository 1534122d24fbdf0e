-- The languages people read: a user's preferred locale and a tenant's
-- default locale, BCP 47 tags ("zh-CN", "en"); '' is none, and the server's
-- default applies. The HTTP API matches them after the request's
-- Accept-Language; channels render a tenant's event messages in its locale.
ALTER TABLE deskkit_users ADD COLUMN locale VARCHAR(35) NOT NULL DEFAULT '';
--bun:split
ALTER TABLE deskkit_tenants ADD COLUMN locale VARCHAR(35) NOT NULL DEFAULT '';
