CREATE TABLE deskkit_tenants (
    id         {{.Identity}},
    name       VARCHAR(128) NOT NULL,
    created_at {{.Timestamp}} NOT NULL,
    CONSTRAINT deskkit_tenants_name_unique UNIQUE (name)
);
--bun:split
CREATE TABLE deskkit_users (
    id           {{.Identity}},
    tenant_id    BIGINT        NOT NULL REFERENCES deskkit_tenants (id),
    username     VARCHAR(128)  NOT NULL,
    display_name VARCHAR(256)  NOT NULL,
    avatar       VARCHAR(2048) NOT NULL DEFAULT '',
    admin        BOOLEAN       NOT NULL DEFAULT FALSE,
    created_at   {{.Timestamp}} NOT NULL,
    CONSTRAINT deskkit_users_username_unique UNIQUE (tenant_id, username)
);
--bun:split
-- ResolveUsers looks users up by (tenant_id, id): the unique index above
-- leads with tenant_id but not id, so it gets its own.
CREATE INDEX deskkit_users_tenant_id_idx ON deskkit_users (tenant_id, id);
--bun:split
CREATE TABLE deskkit_tokens (
    id         {{.Identity}},
    user_id    BIGINT      NOT NULL REFERENCES deskkit_users (id) ON DELETE CASCADE,
    tenant_id  BIGINT      NOT NULL,
    -- Hex SHA-256 of the token; the token itself is never stored.
    token_hash VARCHAR(64) NOT NULL,
    created_at {{.Timestamp}} NOT NULL,
    CONSTRAINT deskkit_tokens_hash_unique UNIQUE (token_hash)
);
--bun:split
CREATE INDEX deskkit_tokens_user_idx ON deskkit_tokens (user_id);
