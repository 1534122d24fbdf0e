-- One row per seed run, counting the entries its committed batches added
-- (each batch updates done in its own transaction), so that a seed that
-- stopped part way resumes exactly where it stopped.
CREATE TABLE deskkit_demo_seeds (
    id          {{.Identity}},
    tenant_id   BIGINT       NOT NULL,
    first_entry BIGINT       NOT NULL,
    entries     BIGINT       NOT NULL,
    projects    BIGINT       NOT NULL,
    done        BIGINT       NOT NULL,
    started_at  {{.Timestamp}} NOT NULL
);
