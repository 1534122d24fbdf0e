ALTER TABLE deskkit_users DROP COLUMN address;
--bun:split
ALTER TABLE deskkit_users DROP COLUMN gender;
--bun:split
ALTER TABLE deskkit_users DROP COLUMN title;
--bun:split
ALTER TABLE deskkit_users DROP COLUMN landline;
--bun:split
ALTER TABLE deskkit_users DROP COLUMN last_name;
--bun:split
ALTER TABLE deskkit_users DROP COLUMN first_name;
