DROP TRIGGER IF EXISTS deskkit_trash_no_move{{if .Postgres}} ON deskkit_trash{{end}};
--bun:split
DROP TRIGGER IF EXISTS deskkit_trash_count_delete{{if .Postgres}} ON deskkit_trash{{end}};
--bun:split
DROP TRIGGER IF EXISTS deskkit_trash_count_insert{{if .Postgres}} ON deskkit_trash{{end}};
--bun:split
{{- if .Postgres}}
DROP FUNCTION IF EXISTS deskkit_trash_no_move();
--bun:split
DROP FUNCTION IF EXISTS deskkit_trash_count_delete();
--bun:split
DROP FUNCTION IF EXISTS deskkit_trash_count_insert();
--bun:split
{{- end}}
DROP TABLE deskkit_trash_counts;
