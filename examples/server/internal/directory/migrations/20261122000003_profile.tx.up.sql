-- The profile fields the verification service shows and edits. Each is
-- optional, '' when unset rather than NULL: none is unique, so NULL would
-- buy nothing and cost every reader a NULL check. display_name stays NOT
-- NULL but may now be '' too: it is the user's full name, which a user may
-- clear, and the directory then shows the username instead.
--
-- E-mail addresses: from this release the directory trims them and
-- lower-cases only the domain; the local part keeps its case, as the
-- receiving mail system owns it. Addresses stored before were lower-cased
-- whole and stay so: they match any lookup written in lower case.
ALTER TABLE deskkit_users ADD COLUMN first_name VARCHAR(100) NOT NULL DEFAULT '';
--bun:split
ALTER TABLE deskkit_users ADD COLUMN last_name VARCHAR(100) NOT NULL DEFAULT '';
--bun:split
-- landline: as the user writes it; unlike mobile, neither E.164 nor unique,
-- as codes are never sent to it.
ALTER TABLE deskkit_users ADD COLUMN landline VARCHAR(40) NOT NULL DEFAULT '';
--bun:split
ALTER TABLE deskkit_users ADD COLUMN title VARCHAR(100) NOT NULL DEFAULT '';
--bun:split
-- gender: a code the service chooses (MALE, FEMALE, UNKNOWN); '' is unset.
ALTER TABLE deskkit_users ADD COLUMN gender VARCHAR(16) NOT NULL DEFAULT '';
--bun:split
ALTER TABLE deskkit_users ADD COLUMN address VARCHAR(200) NOT NULL DEFAULT '';
