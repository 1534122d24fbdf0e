{{- if .Postgres}}
DROP FUNCTION deskkit_outbox_claim(varchar, bigint, integer, integer, integer, text, bigint, varchar, bigint, bigint, bigint, integer, bigint[], integer, double precision, bigint);
--bun:split
DROP FUNCTION deskkit_outbox_record(text, text, varchar, integer, integer);
{{- else}}
SELECT 1;
{{- end}}
