-- The contact addresses verification needs, each optional (NULL) and, when
-- set, unique within the tenant: a code sent to an address must reach one
-- user. NULLs never collide, so any number of users may have none; the
-- partial indexes also leave those users out of the index.
--
-- mobile: E.164, "+" and at most 15 digits.
ALTER TABLE deskkit_users ADD COLUMN mobile VARCHAR(16) NULL;
--bun:split
-- country: ISO 3166-1 alpha-2, upper case ("DE").
ALTER TABLE deskkit_users ADD COLUMN country VARCHAR(2) NULL;
--bun:split
-- email: at most 254 characters (RFC 5321), stored lower-cased so that
-- addresses differing only in case collide.
ALTER TABLE deskkit_users ADD COLUMN email VARCHAR(254) NULL;
--bun:split
CREATE UNIQUE INDEX deskkit_users_mobile_unique ON deskkit_users (tenant_id, mobile) WHERE mobile IS NOT NULL;
--bun:split
CREATE UNIQUE INDEX deskkit_users_email_unique ON deskkit_users (tenant_id, email) WHERE email IS NOT NULL;
--bun:split
-- A token's end of life; NULL for a token that does not expire.
ALTER TABLE deskkit_tokens ADD COLUMN expires_at {{.Timestamp}} NULL;
