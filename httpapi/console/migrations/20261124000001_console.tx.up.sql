-- Console sessions. The cookie holds a random id; only its SHA-256 (hex) is
-- kept, so a copy of the database signs nobody in. token_hash is the
-- directory's hash of the bearer token the session signed in with: every
-- request authenticates it again, so revoking the token ends the session.
-- Times are Unix milliseconds, which compare alike on both databases.
CREATE TABLE deskkit_console_sessions (
    id_hash     VARCHAR(64) NOT NULL PRIMARY KEY,
    token_hash  VARCHAR(64) NOT NULL,
    tenant_id   BIGINT      NOT NULL,
    user_id     BIGINT      NOT NULL,
    created_ms  BIGINT      NOT NULL,
    expires_ms  BIGINT      NOT NULL
);
--bun:split
CREATE INDEX deskkit_console_sessions_expires_idx ON deskkit_console_sessions (expires_ms);
--bun:split
-- One-time sign-in links (server token -console): the code's SHA-256, the
-- token the link signs in with, and when the link dies. A redeemed link is
-- deleted in the statement that redeems it, so it works once.
CREATE TABLE deskkit_console_links (
    code_hash   VARCHAR(64) NOT NULL PRIMARY KEY,
    token_hash  VARCHAR(64) NOT NULL,
    created_ms  BIGINT      NOT NULL,
    expires_ms  BIGINT      NOT NULL
);
--bun:split
-- Sign-in attempts, per client address and for all clients together, in
-- internal/limiter's shape, so that the limits hold across replicas.
CREATE TABLE deskkit_console_limits (
    limit_key       VARCHAR(400) NOT NULL PRIMARY KEY,
    window_start_ms BIGINT       NOT NULL,
    window_end_ms   BIGINT       NOT NULL,
    hits            INTEGER      NOT NULL
);
