{{- if .Postgres}}
DROP FUNCTION IF EXISTS deskkit_outbox_rate_next(text, bigint, bigint);
--bun:split
{{- end}}
DROP TABLE IF EXISTS deskkit_outbox_workers;
--bun:split
DROP TABLE IF EXISTS deskkit_outbox_targets;
