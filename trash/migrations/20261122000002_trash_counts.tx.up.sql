-- Entries per tenant, target type and project, kept by triggers so that every
-- writer (Add in a host transaction, batch jobs, a bulk load) keeps it exact.
-- Unfiltered search totals and project counts read it instead of counting up
-- to millions of rows.
CREATE TABLE deskkit_trash_counts (
    tenant_id   BIGINT      NOT NULL,
    target_type VARCHAR(16) NOT NULL,
    project_id  BIGINT      NOT NULL,
    entries     BIGINT      NOT NULL,
    PRIMARY KEY (tenant_id, target_type, project_id)
);
--bun:split
INSERT INTO deskkit_trash_counts (tenant_id, target_type, project_id, entries)
SELECT tenant_id, target_type, project_id, count(*) FROM deskkit_trash GROUP BY tenant_id, target_type, project_id;
--bun:split
{{- if .Postgres}}
-- Statement-level triggers see a whole batch at once; counters are touched in
-- key order, so concurrent batches lock them in the same order.
CREATE FUNCTION deskkit_trash_count_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO deskkit_trash_counts AS c (tenant_id, target_type, project_id, entries)
    SELECT tenant_id, target_type, project_id, count(*) FROM deskkit_trash_new
    GROUP BY tenant_id, target_type, project_id
    ORDER BY tenant_id, target_type, project_id
    ON CONFLICT (tenant_id, target_type, project_id) DO UPDATE SET entries = c.entries + EXCLUDED.entries;
    RETURN NULL;
END $$;
--bun:split
CREATE FUNCTION deskkit_trash_count_delete() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    g RECORD;
BEGIN
    FOR g IN
        SELECT tenant_id, target_type, project_id, count(*) AS n FROM deskkit_trash_old
        GROUP BY tenant_id, target_type, project_id
        ORDER BY tenant_id, target_type, project_id
    LOOP
        UPDATE deskkit_trash_counts SET entries = entries - g.n
        WHERE tenant_id = g.tenant_id AND target_type = g.target_type AND project_id = g.project_id;
    END LOOP;
    RETURN NULL;
END $$;
--bun:split
CREATE TRIGGER deskkit_trash_count_insert AFTER INSERT ON deskkit_trash
    REFERENCING NEW TABLE AS deskkit_trash_new
    FOR EACH STATEMENT EXECUTE FUNCTION deskkit_trash_count_insert();
--bun:split
CREATE TRIGGER deskkit_trash_count_delete AFTER DELETE ON deskkit_trash
    REFERENCING OLD TABLE AS deskkit_trash_old
    FOR EACH STATEMENT EXECUTE FUNCTION deskkit_trash_count_delete();
{{- else}}
CREATE TRIGGER deskkit_trash_count_insert AFTER INSERT ON deskkit_trash BEGIN
    INSERT INTO deskkit_trash_counts (tenant_id, target_type, project_id, entries)
    VALUES (NEW.tenant_id, NEW.target_type, NEW.project_id, 1)
    ON CONFLICT (tenant_id, target_type, project_id) DO UPDATE SET entries = entries + 1;
END;
--bun:split
CREATE TRIGGER deskkit_trash_count_delete AFTER DELETE ON deskkit_trash BEGIN
    UPDATE deskkit_trash_counts SET entries = entries - 1
    WHERE tenant_id = OLD.tenant_id AND target_type = OLD.target_type AND project_id = OLD.project_id;
END;
{{- end}}
--bun:split
-- deskkit_trash rows are only ever inserted and deleted; an UPDATE that moved
-- a row to another project or type would make the counts lie, so none may.
{{- if .Postgres}}
CREATE FUNCTION deskkit_trash_no_move() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'deskkit_trash: tenant_id, project_id and target_type cannot change';
END $$;
--bun:split
CREATE TRIGGER deskkit_trash_no_move BEFORE UPDATE OF tenant_id, project_id, target_type ON deskkit_trash
    FOR EACH ROW WHEN (OLD.tenant_id IS DISTINCT FROM NEW.tenant_id OR OLD.project_id IS DISTINCT FROM NEW.project_id OR OLD.target_type IS DISTINCT FROM NEW.target_type)
    EXECUTE FUNCTION deskkit_trash_no_move();
{{- else}}
CREATE TRIGGER deskkit_trash_no_move BEFORE UPDATE OF tenant_id, project_id, target_type ON deskkit_trash
    WHEN OLD.tenant_id IS NOT NEW.tenant_id OR OLD.project_id IS NOT NEW.project_id OR OLD.target_type IS NOT NEW.target_type
BEGIN
    SELECT RAISE(ABORT, 'deskkit_trash: tenant_id, project_id and target_type cannot change');
END;
{{- end}}
