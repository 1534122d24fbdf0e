{{- if .Postgres}}
DROP FUNCTION IF EXISTS deskkit_outbox_in_flight(text, bigint, bigint, bigint, bigint[]);
{{- else}}
SELECT 1;
{{- end}}
