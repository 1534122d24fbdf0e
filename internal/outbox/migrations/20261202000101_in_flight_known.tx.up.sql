{{- if .Postgres}}
-- deskkit_outbox_in_flight with a fifth argument: the deliveries whose
-- attempts the claiming worker knows have ended, their outcomes not yet
-- recorded ($5), which the count leaves out. Their leases hold until the
-- worker's flush records them, but their attempts no longer run: counted,
-- they would hold the target's cap between an attempt's end and its
-- flush. A flush that commits between the claim's start and the count
-- clears those leases, which the count then does not see either: the
-- count is exact whichever comes first. Read with a snapshot of its own,
-- as the four-argument function (see its migration).
CREATE OR REPLACE FUNCTION deskkit_outbox_in_flight(text, bigint, bigint, bigint, bigint[])
RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    RETURN (SELECT count(*) FROM deskkit_outbox_deliveries
        WHERE lease_token IS NOT NULL AND kind = $1 AND tenant_id = $2 AND target_id = $3
            AND status = 'PENDING' AND due_at_ms > $4 AND id <> ALL ($5));
END
$$;
{{- else}}
-- SQLite (one process, one writer) serialises the claims: nothing to add.
SELECT 1;
{{- end}}
