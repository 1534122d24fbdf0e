-- Times in these tables are Unix milliseconds (BIGINT): the rate limits
-- compute windows in SQL, and integers compare and add alike on PostgreSQL
-- and SQLite, where timestamps are text.
--
-- Codes: one row per (user, kind, bizKey, address); a new code for the same
-- four replaces the old one in place. Only a keyed hash of the code is kept.
-- state: 'pending' from its creation until the sender accepted it (unusable,
-- so that a failed or interrupted send leaves no usable code), 'active',
-- then 'used' or 'failed'.
CREATE TABLE deskkit_verify_codes (
    id            {{.Identity}},
    tenant_id     BIGINT       NOT NULL,
    user_id       BIGINT       NOT NULL,
    kind          VARCHAR(8)   NOT NULL,
    biz_key       VARCHAR(64)  NOT NULL,
    address       VARCHAR(254) NOT NULL,
    -- Hex HMAC-SHA256 of the code and its context under a key derived from
    -- the server secret.
    code_hash     VARCHAR(64)  NOT NULL,
    state         VARCHAR(8)   NOT NULL,
    -- Checks of this code so far, counted before the comparison.
    attempts      INTEGER      NOT NULL DEFAULT 0,
    created_at_ms BIGINT       NOT NULL,
    expires_at_ms BIGINT       NOT NULL,
    CONSTRAINT deskkit_verify_codes_unique UNIQUE (tenant_id, user_id, kind, biz_key, address)
);
--bun:split
CREATE INDEX deskkit_verify_codes_expires_idx ON deskkit_verify_codes (expires_at_ms);
--bun:split
-- Link secrets: what a successful check answers, bound to the user, the
-- bizKey and the address it proved; single use.
CREATE TABLE deskkit_verify_links (
    id            {{.Identity}},
    tenant_id     BIGINT       NOT NULL,
    user_id       BIGINT       NOT NULL,
    kind          VARCHAR(8)   NOT NULL,
    biz_key       VARCHAR(64)  NOT NULL,
    address       VARCHAR(254) NOT NULL,
    -- Hex SHA-256 of the secret (256 random bits: a key adds nothing).
    secret_hash   VARCHAR(64)  NOT NULL,
    created_at_ms BIGINT       NOT NULL,
    expires_at_ms BIGINT       NOT NULL,
    used          BOOLEAN      NOT NULL DEFAULT FALSE,
    CONSTRAINT deskkit_verify_links_hash_unique UNIQUE (secret_hash)
);
--bun:split
CREATE INDEX deskkit_verify_links_expires_idx ON deskkit_verify_links (expires_at_ms);
--bun:split
-- Rate limits: one row per limited thing (a user's sends today, an
-- address's sends this hour...), counted in fixed windows that open with
-- the first event. Each limit is taken by one atomic upsert.
CREATE TABLE deskkit_verify_limits (
    limit_key       VARCHAR(400) NOT NULL PRIMARY KEY,
    window_start_ms BIGINT       NOT NULL,
    window_end_ms   BIGINT       NOT NULL,
    hits            INTEGER      NOT NULL
);
--bun:split
CREATE INDEX deskkit_verify_limits_end_idx ON deskkit_verify_limits (window_end_ms);
--bun:split
-- The outbox of notices: a change of address writes its notice to the old
-- address here, in the transaction of the change, and it is sent after the
-- commit. Rows are deleted once sent; SendNotices retries what is left.
CREATE TABLE deskkit_verify_notices (
    id            {{.Identity}},
    tenant_id     BIGINT       NOT NULL,
    user_id       BIGINT       NOT NULL,
    kind          VARCHAR(8)   NOT NULL,
    biz_key       VARCHAR(64)  NOT NULL,
    address       VARCHAR(254) NOT NULL,
    -- The new address, masked as the notice shows it.
    new_address   VARCHAR(254) NOT NULL,
    created_at_ms BIGINT       NOT NULL,
    attempts      INTEGER      NOT NULL DEFAULT 0
);
