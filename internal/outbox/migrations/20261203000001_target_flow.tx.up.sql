-- The flow of each target (a channel; a notice's user), shared by every
-- worker of its kind on the database (issue 29):
--
-- in_flight_limit: how many of its deliveries may be in flight at once,
--   moving between the worker's floor (Config.TargetInFlight) and ceiling
--   (Config.TargetInFlightMax, else the tenant's slots of every live
--   worker): it grows by one for a limit's worth of quick successes and
--   halves on a sign of overload (429, 503, a timeout, a failed
--   connection) or on latency well above the target's usual, as TCP's
--   window does (AIMD). Fractional: the growth is 1/limit per success.
-- base_ms, latency_ms: the target's usual attempt time (the lowest mean of
--   a flush's successes, drifting toward newer means over about 30 s) and
--   the last flush's mean.
-- last_oks, last_busy: the last flush's successes and whether it saw a
--   sign of overload: what the flush's upsert reads from its new row.
-- paused_until_ms: a Retry-After pauses the whole target, not only the one
--   delivery, until then (at most an hour ahead).
-- rate_per_s: the target's own limit in deliveries a second, NULL for the
--   worker's default (Config.TargetRate); rate_next_ms: when the next
--   delivery may start (a GCRA's theoretical arrival time, Unix ms): a
--   claim of a rate-limited target takes no more than fall due by then and
--   a short horizon, spaces them 1/rate apart, and moves it on.
--
-- A row is written by the first flush of a target's outcomes, or when a
-- rate is set; claims read it by primary key. Updates change no indexed
-- column, so they are HOT where the page has room: the fillfactor leaves
-- it.
CREATE TABLE deskkit_outbox_targets (
    kind            VARCHAR(32)      NOT NULL,
    tenant_id       BIGINT           NOT NULL,
    target_id       BIGINT           NOT NULL,
    in_flight_limit DOUBLE PRECISION NOT NULL,
    base_ms         DOUBLE PRECISION,
    latency_ms      DOUBLE PRECISION,
    last_oks        INTEGER          NOT NULL DEFAULT 0,
    last_busy       INTEGER          NOT NULL DEFAULT 0,
    paused_until_ms BIGINT,
    rate_per_s      DOUBLE PRECISION,
    rate_next_ms    DOUBLE PRECISION,
    changed_at_ms   BIGINT           NOT NULL,
    PRIMARY KEY (kind, tenant_id, target_id)
){{if .Postgres}} WITH (fillfactor = 70){{end}};
--bun:split
-- The workers running Run, by kind: each says every few seconds how many
-- of its slots one tenant may hold, and the sum over the live ones is the
-- default ceiling of a target's in-flight limit, counted across replicas.
CREATE TABLE deskkit_outbox_workers (
    kind         VARCHAR(32) NOT NULL,
    worker_id    VARCHAR(40) NOT NULL,
    tenant_slots INTEGER     NOT NULL,
    seen_at_ms   BIGINT      NOT NULL,
    PRIMARY KEY (kind, worker_id)
);
{{- if .Postgres}}
--bun:split
-- When a target's next rate-limited delivery may start, read with a
-- snapshot of its own (as deskkit_outbox_in_flight, and for the same
-- reason): a claim calls it once it holds the target's advisory lock, so
-- that it sees the mark a claim that held the lock before it committed.
CREATE OR REPLACE FUNCTION deskkit_outbox_rate_next(text, bigint, bigint)
RETURNS double precision LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    RETURN (SELECT rate_next_ms FROM deskkit_outbox_targets
        WHERE kind = $1 AND tenant_id = $2 AND target_id = $3);
END
$$;
{{- end}}
