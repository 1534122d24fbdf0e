-- The server secret, when DESKKIT_SECRET does not give one: created on the
-- first start and kept here, so that every replica over this database
-- derives the same keys and codes survive a restart. id is always 1, so two
-- replicas starting together insert one row between them.
CREATE TABLE deskkit_server_secret (
    id         INTEGER      NOT NULL PRIMARY KEY,
    secret     VARCHAR(64)  NOT NULL,
    created_at {{.Timestamp}} NOT NULL
);
