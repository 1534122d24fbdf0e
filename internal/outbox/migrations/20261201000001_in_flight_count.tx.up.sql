{{- if .Postgres}}
-- The deliveries of one target in flight: leased, and claimed recently
-- enough to count ($1 the kind, $2 the tenant, $3 the target, $4 the lease
-- end after which a lease counts), read with a snapshot of their own. A
-- claim on PostgreSQL takes a transaction-scoped advisory lock on each
-- target it claims from, then counts the target's leases through this
-- function: a VOLATILE function's query takes a fresh snapshot, after the
-- lock, so it sees the leases of a claim that held the lock and committed
-- after the claim's own statement began, which that statement's snapshot
-- does not; the cap then holds across replicas. PL/pgSQL keeps the query's
-- plan for the session (through deskkit_outbox_leased_idx).
CREATE OR REPLACE FUNCTION deskkit_outbox_in_flight(text, bigint, bigint, bigint)
RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    RETURN (SELECT count(*) FROM deskkit_outbox_deliveries
        WHERE lease_token IS NOT NULL AND kind = $1 AND tenant_id = $2 AND target_id = $3
            AND status = 'PENDING' AND due_at_ms > $4);
END
$$;
{{- else}}
-- SQLite (one process, one writer) serialises the claims: nothing to add.
SELECT 1;
{{- end}}
