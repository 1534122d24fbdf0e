-- Times in these tables are Unix milliseconds (BIGINT), as in the other
-- deskkit tables: integers compare and add alike on PostgreSQL and SQLite.
--
-- Channels: a tenant's event channels. The address and the secret are
-- AES-256-GCM ciphertexts ("v1:" + base64 of nonce and sealed text) under a
-- key derived from the server secret, bound to the row's tenant, type and
-- field, so that a database dump leaks neither a webhook's signing secret
-- nor a robot's key (which sits in its URL). The name is unique within the
-- tenant; the constraint is named so that a refused insert is recognised as
-- ErrNameTaken on both databases.
CREATE TABLE deskkit_channels (
    id            {{.Identity}},
    tenant_id     BIGINT       NOT NULL,
    channel_type  VARCHAR(16)  NOT NULL,
    name          VARCHAR(100) NOT NULL,
    address_enc   TEXT         NOT NULL,
    secret_enc    TEXT,
    created_at_ms BIGINT       NOT NULL,
    updated_at_ms BIGINT       NOT NULL,
    CONSTRAINT deskkit_channels_name_unique UNIQUE (tenant_id, name)
);
--bun:split
-- List reads a tenant's channels of one type in id order.
CREATE INDEX deskkit_channels_type_idx ON deskkit_channels (tenant_id, channel_type, id);
--bun:split
-- The quota counter: how many channels of each type a tenant has. Add takes
-- one unit with a single upsert guarded by the quota in the transaction of
-- its insert, and Delete gives it back in the transaction of its delete, so
-- parallel adds at the edge cannot exceed the quota on either database. Its
-- row is the first lock of every write of the type (see store.go).
CREATE TABLE deskkit_channel_counts (
    tenant_id    BIGINT      NOT NULL,
    channel_type VARCHAR(16) NOT NULL,
    n            INTEGER     NOT NULL CHECK (n >= 0),
    PRIMARY KEY (tenant_id, channel_type)
);
--bun:split
-- Rate limits of test messages, in internal/limiter's shape: one row per
-- limited thing, counted in fixed windows that open with the first event.
CREATE TABLE deskkit_channel_limits (
    limit_key       VARCHAR(400) NOT NULL PRIMARY KEY,
    window_start_ms BIGINT       NOT NULL,
    window_end_ms   BIGINT       NOT NULL,
    hits            INTEGER      NOT NULL
);
--bun:split
CREATE INDEX deskkit_channel_limits_end_idx ON deskkit_channel_limits (window_end_ms);
