{{- if .Postgres}}
ALTER INDEX deskkit_trash_name_trgm_idx RESET (fastupdate);
{{- else}}
SELECT 1;
{{- end}}
