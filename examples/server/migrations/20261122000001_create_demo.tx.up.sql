CREATE TABLE deskkit_demo_sprints (
    id         {{.Identity}},
    tenant_id  BIGINT       NOT NULL,
    project_id BIGINT       NOT NULL,
    name       VARCHAR(512) NOT NULL,
    created_by BIGINT       NOT NULL,
    state      VARCHAR(16)  NOT NULL CHECK (state IN ('active', 'trashed'))
);
--bun:split
CREATE TABLE deskkit_demo_tasks (
    id         {{.Identity}},
    tenant_id  BIGINT       NOT NULL,
    project_id BIGINT       NOT NULL,
    sprint_id  BIGINT,
    name       VARCHAR(512) NOT NULL,
    created_by BIGINT       NOT NULL,
    -- active; trashed: in the trash with an entry of its own; hidden: gone
    -- with its trashed sprint, back when the sprint comes back.
    state      VARCHAR(16)  NOT NULL CHECK (state IN ('active', 'trashed', 'hidden'))
);
--bun:split
-- Hiding, restoring and purging the tasks of a sprint.
CREATE INDEX deskkit_demo_tasks_sprint_idx ON deskkit_demo_tasks (tenant_id, sprint_id) WHERE sprint_id IS NOT NULL;
