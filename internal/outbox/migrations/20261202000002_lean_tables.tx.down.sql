{{- if .Postgres}}
ALTER TABLE deskkit_outbox_deliveries RESET (
    autovacuum_vacuum_scale_factor,
    autovacuum_vacuum_threshold,
    vacuum_index_cleanup,
    autovacuum_analyze_scale_factor,
    autovacuum_analyze_threshold
);
--bun:split
ALTER TABLE deskkit_outbox_events RESET (
    autovacuum_vacuum_scale_factor,
    autovacuum_vacuum_insert_scale_factor
);
--bun:split
ALTER TABLE deskkit_outbox_attempts RESET (
    autovacuum_vacuum_scale_factor,
    autovacuum_vacuum_insert_scale_factor
);
{{- else}}
SELECT 1;
{{- end}}
