{{- if .Postgres}}
-- With fastupdate, new names wait in the GIN index's pending list, which
-- every substring search scans from end to end until vacuum merges it: after
-- a bulk delete-and-load, a search that took a millisecond took a hundred.
-- Each insert now updates the index in place: slightly slower deletes into
-- the trash, searches that stay fast without depending on vacuum.
ALTER INDEX deskkit_trash_name_trgm_idx SET (fastupdate = off);
--bun:split
SELECT gin_clean_pending_list('deskkit_trash_name_trgm_idx'::regclass);
{{- else}}
-- SQLite has no trigram index: nothing to change.
SELECT 1;
{{- end}}
