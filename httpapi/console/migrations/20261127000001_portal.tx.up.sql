-- Portal sessions: a session opened by a portal link acts for the principal
-- the link named (tenant_id, user_id, admin) within its scopes, and has no
-- token (token_hash ''). scopes is a comma-separated list; '' means every
-- page (a session signed in with a token).
ALTER TABLE deskkit_console_sessions ADD COLUMN admin SMALLINT NOT NULL DEFAULT 0;
--bun:split
ALTER TABLE deskkit_console_sessions ADD COLUMN scopes VARCHAR(200) NOT NULL DEFAULT '';
--bun:split
-- The names the header shows (Config.Names), asked once when the session
-- opens rather than on every page.
ALTER TABLE deskkit_console_sessions ADD COLUMN user_name VARCHAR(200) NOT NULL DEFAULT '';
--bun:split
ALTER TABLE deskkit_console_sessions ADD COLUMN tenant_name VARCHAR(200) NOT NULL DEFAULT '';
--bun:split
-- Portal links: the SHA-256 of the nonce a link carries, the principal and
-- scopes it opens a session for, and when it dies. Redeeming deletes the
-- row in the statement that reads it, so a link opens one session, on any
-- replica.
CREATE TABLE deskkit_console_portal_links (
    nonce_hash  VARCHAR(64)  NOT NULL PRIMARY KEY,
    tenant_id   BIGINT       NOT NULL,
    user_id     BIGINT       NOT NULL,
    admin       SMALLINT     NOT NULL,
    scopes      VARCHAR(200) NOT NULL,
    created_ms  BIGINT       NOT NULL,
    expires_ms  BIGINT       NOT NULL
);
--bun:split
CREATE INDEX deskkit_console_portal_links_expires_idx ON deskkit_console_portal_links (expires_ms);
