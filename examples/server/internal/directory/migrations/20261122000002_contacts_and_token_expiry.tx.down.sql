ALTER TABLE deskkit_tokens DROP COLUMN expires_at;
--bun:split
DROP INDEX deskkit_users_email_unique;
--bun:split
DROP INDEX deskkit_users_mobile_unique;
--bun:split
ALTER TABLE deskkit_users DROP COLUMN email;
--bun:split
ALTER TABLE deskkit_users DROP COLUMN country;
--bun:split
ALTER TABLE deskkit_users DROP COLUMN mobile;
