{{if .Postgres}}
CREATE EXTENSION IF NOT EXISTS pg_trgm;
--bun:split
{{end}}
CREATE TABLE deskkit_trash (
    id                 {{.Identity}},
    tenant_id          BIGINT       NOT NULL,
    project_id         BIGINT       NOT NULL,
    target_type        VARCHAR(16)  NOT NULL CHECK (target_type IN ('TASK', 'TASK_SPRINT')),
    target_id          BIGINT       NOT NULL,
    target_name        VARCHAR(512) NOT NULL,
    -- target_name folded to lower case by the library (Unicode-aware, which
    -- SQLite's lower() is not), so substring search is one LIKE on both databases.
    target_name_folded VARCHAR(512) NOT NULL,
    sprint_id          BIGINT,
    created_by         BIGINT       NOT NULL,
    deleted_by         BIGINT       NOT NULL,
    deleted_date       {{.Timestamp}} NOT NULL,
    CONSTRAINT deskkit_trash_target_unique UNIQUE (tenant_id, target_type, target_id)
);
--bun:split
-- Search by type ordered by id (the default), and the tenant-wide count.
CREATE INDEX deskkit_trash_type_id_idx ON deskkit_trash (tenant_id, target_type, id);
--bun:split
-- Project filters, project count, restore-all and clear-all batches.
CREATE INDEX deskkit_trash_project_idx ON deskkit_trash (tenant_id, project_id, target_type, id);
--bun:split
CREATE INDEX deskkit_trash_deleted_date_idx ON deskkit_trash (tenant_id, target_type, deleted_date, id);
--bun:split
CREATE INDEX deskkit_trash_name_idx ON deskkit_trash (tenant_id, target_type, target_name, id);
--bun:split
-- Finding the trashed tasks of a sprint.
CREATE INDEX deskkit_trash_sprint_idx ON deskkit_trash (tenant_id, sprint_id) WHERE sprint_id IS NOT NULL;
--bun:split
-- Retention purges across tenants by age.
CREATE INDEX deskkit_trash_age_idx ON deskkit_trash (deleted_date);
{{if .Postgres}}
--bun:split
-- Substring search: LIKE '%term%' on the folded name uses this trigram index.
CREATE INDEX deskkit_trash_name_trgm_idx ON deskkit_trash USING gin (target_name_folded gin_trgm_ops);
{{end}}
