DROP TABLE deskkit_verify_notices;
--bun:split
DROP TABLE deskkit_verify_limits;
--bun:split
DROP TABLE deskkit_verify_links;
--bun:split
DROP TABLE deskkit_verify_codes;
