{{- if .Postgres}}
-- The claim and the flush on PostgreSQL, as functions whose plans
-- PostgreSQL keeps for the server session, also through a pooler in
-- transaction mode (internal/outbox/functions.go). Their bodies are
-- claimPostgres and recordPostgres; TestFunctionsMigrated checks that the
-- latest migration defining them holds the build's statements.
CREATE OR REPLACE FUNCTION deskkit_outbox_claim(varchar, bigint, integer, integer, integer, text, bigint, varchar, bigint, bigint, bigint, integer, bigint[], integer, double precision, bigint)
RETURNS TABLE (id bigint, tenant_id bigint, event_id varchar, kind varchar, target_id bigint, payload text, attempts integer, step integer,
  not_before_ms double precision, rate double precision, has_event boolean, event_type varchar, occurred_at_ms bigint,
  title text, body text, data text, messages text, last_tenant_id bigint, last_target_id bigint, found integer,
  capped boolean, "full" boolean)
LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
BEGIN
RETURN QUERY WITH RECURSIVE targets AS (
  (SELECT tenant_id, target_id, 1 AS i FROM deskkit_outbox_deliveries
   WHERE status = 'PENDING' AND kind = $1 AND (tenant_id, target_id) > ($10, $11)
   ORDER BY tenant_id, target_id LIMIT 1)
  UNION ALL
  SELECT n.tenant_id, n.target_id, t.i + 1 FROM targets t CROSS JOIN LATERAL (
    SELECT d.tenant_id, d.target_id FROM deskkit_outbox_deliveries d
    WHERE d.status = 'PENDING' AND d.kind = $1 AND (d.tenant_id, d.target_id) > (t.tenant_id, t.target_id)
    ORDER BY d.tenant_id, d.target_id LIMIT 1) n
  WHERE t.i < $12
),
flow AS (
  SELECT t.tenant_id, t.target_id, t.i,
    CASE WHEN g.in_flight_limit < 1 THEN 1
      ELSE GREATEST(CAST($3 AS bigint), LEAST(CAST($14 AS bigint), COALESCE(CAST(floor(g.in_flight_limit) AS bigint), $3))) END AS lim,
    COALESCE(g.rate_per_s, CAST($15 AS double precision)) AS rate,
    COALESCE(g.paused_until_ms, 0) > $2 AS paused
  FROM targets t LEFT JOIN deskkit_outbox_targets g
    ON g.kind = $1 AND g.tenant_id = t.tenant_id AND g.target_id = t.target_id
  WHERE t.i < $12
),
locked AS MATERIALIZED (
  SELECT f.*, NOT f.paused AND pg_try_advisory_xact_lock(hashtextextended(
      current_schema() || '.deskkit_outbox.' || CAST($1 AS text) || '.' || f.tenant_id || '.' || f.target_id, 0)) AS locked
  FROM flow f
),
paced AS MATERIALIZED (
  SELECT l.*, CASE WHEN l.locked AND l.rate > 0
      THEN GREATEST(CAST($2 AS double precision), COALESCE(deskkit_outbox_rate_next(CAST($1 AS text), l.tenant_id, l.target_id), 0)) END AS start
  FROM locked l
),
free AS MATERIALIZED (
  SELECT p.tenant_id, p.target_id, p.rate, p.start,
    CASE WHEN NOT p.locked THEN 0
      ELSE LEAST(p.lim - deskkit_outbox_in_flight(CAST($1 AS text), p.tenant_id, p.target_id, $9, CAST($13 AS bigint[])),
        CASE WHEN p.rate > 0 THEN GREATEST(0, CAST(floor(($2 + $16 - p.start) * p.rate / 1000) AS bigint) + 1) ELSE p.lim END)
      END AS free,
    GREATEST(1, (2 * $4 + v.n - 1) / v.n) AS share
  FROM paced p, (SELECT count(*) AS n FROM targets WHERE i < $12) v
),
room AS (SELECT tenant_id, target_id, free, LEAST(free, share) AS room, rate, start FROM free),
due AS (
  SELECT c.id, c.tenant_id, c.target_id, c.due_at_ms,
    row_number() OVER (PARTITION BY c.tenant_id, c.target_id ORDER BY c.due_at_ms, c.id) AS turn
  FROM room r CROSS JOIN LATERAL (
    SELECT d.id, d.tenant_id, d.target_id, d.due_at_ms FROM deskkit_outbox_deliveries d
    WHERE d.status = 'PENDING' AND d.kind = $1 AND d.tenant_id = r.tenant_id AND d.target_id = r.target_id
      AND d.due_at_ms <= $2
    ORDER BY d.due_at_ms LIMIT r.room
    FOR UPDATE SKIP LOCKED) c
  WHERE r.room > 0
),
ranked AS (
  SELECT id, tenant_id, due_at_ms,
    row_number() OVER (PARTITION BY tenant_id ORDER BY turn, due_at_ms, id) AS turn
  FROM due
),
pick AS (
  SELECT r.id FROM ranked r
  LEFT JOIN json_each_text(CAST($6 AS json)) h ON h.key = CAST(r.tenant_id AS text)
  WHERE r.turn <= $5 - COALESCE(CAST(h.value AS integer), 0)
  ORDER BY r.turn, r.due_at_ms, r.id LIMIT $4
),
lazy AS (SELECT set_config('synchronous_commit', 'off', true) AS v),
claimed AS (
  UPDATE deskkit_outbox_deliveries d SET due_at_ms = $7, lease_token = $8, attempts = d.attempts + 1
  FROM pick, lazy WHERE d.id = pick.id
  RETURNING d.id, d.tenant_id, d.event_id, d.kind, d.target_id, d.payload, d.attempts, d.step
),
spaced AS (
  SELECT c.id, r.start + (d.turn - 1) * 1000 / r.rate AS not_before, r.rate, r.start, c.tenant_id, c.target_id
  FROM claimed c JOIN due d ON d.id = c.id
  JOIN room r ON r.tenant_id = c.tenant_id AND r.target_id = c.target_id
  WHERE r.rate > 0
),
moved AS (
  INSERT INTO deskkit_outbox_targets AS g (kind, tenant_id, target_id, in_flight_limit, rate_next_ms, changed_at_ms)
  SELECT $1, tenant_id, target_id, $3, max(start) + count(*) * 1000 / max(rate), $2 FROM spaced GROUP BY tenant_id, target_id
  ON CONFLICT (kind, tenant_id, target_id) DO UPDATE SET rate_next_ms = excluded.rate_next_ms
)
SELECT c.*, s.not_before AS not_before_ms, s.rate, e.event_id IS NOT NULL AS has_event, e.event_type, e.occurred_at_ms, e.title, e.body, e.data, e.messages,
  last.tenant_id AS last_tenant_id, last.target_id AS last_target_id, last.found,
  EXISTS (SELECT 1 FROM room WHERE room <= 0) OR EXISTS (SELECT 1 FROM ranked r
    LEFT JOIN json_each_text(CAST($6 AS json)) h ON h.key = CAST(r.tenant_id AS text)
    WHERE r.turn > $5 - COALESCE(CAST(h.value AS integer), 0)) AS capped,
  NOT EXISTS (SELECT 1 FROM room r WHERE r.free > (SELECT count(*) FROM claimed c
    WHERE c.tenant_id = r.tenant_id AND c.target_id = r.target_id)) AS full
FROM (SELECT t.tenant_id, t.target_id, (SELECT max(i) FROM targets) AS found FROM targets t WHERE t.i < $12 ORDER BY t.i DESC LIMIT 1) last
LEFT JOIN (claimed c
  LEFT JOIN deskkit_outbox_events e ON e.tenant_id = c.tenant_id AND e.event_id = c.event_id
  LEFT JOIN spaced s ON s.id = c.id) ON true;
END
$fn$;
--bun:split
CREATE OR REPLACE FUNCTION deskkit_outbox_record(text, text, varchar, integer, integer)
RETURNS TABLE (id bigint, tenant_id bigint, target_id bigint, in_flight_limit double precision)
LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
BEGIN
RETURN QUERY WITH v AS (
  SELECT * FROM json_to_recordset(CAST($1 AS json)) AS v (id bigint, token varchar(40), status varchar(16), step integer,
    due bigint, code integer, err text, errj text, fin bigint, att integer, started bigint, took bigint, resp text, exch text)
), s AS (
  SELECT * FROM json_to_recordset(CAST($2 AS json)) AS s (tenant_id bigint, target_id bigint, in_flight_limit double precision,
    latency_ms double precision, last_oks integer, last_busy integer, paused_until_ms bigint, changed_at_ms bigint)
), recorded AS (UPDATE deskkit_outbox_deliveries SET
  payload = CASE WHEN v.status = 'PENDING' THEN deskkit_outbox_deliveries.payload END,
  status = v.status, step = v.step, due_at_ms = v.due, lease_token = NULL,
  last_status_code = v.code, last_error = v.err, last_error_json = v.errj, finished_at_ms = v.fin
FROM v WHERE deskkit_outbox_deliveries.id = v.id AND deskkit_outbox_deliveries.lease_token = v.token
RETURNING deskkit_outbox_deliveries.id
), attempts AS (INSERT INTO deskkit_outbox_attempts (delivery_id, attempt_no, started_at_ms, duration_ms, status_code, error, error_json, response, exchange)
SELECT v.id, v.att, v.started, v.took, v.code, v.err, v.errj, v.resp, v.exch FROM v WHERE v.id IN (SELECT id FROM recorded)
), flow AS (INSERT INTO deskkit_outbox_targets AS g
  (kind, tenant_id, target_id, in_flight_limit, base_ms, latency_ms, last_oks, last_busy, paused_until_ms, changed_at_ms)
SELECT CAST($3 AS VARCHAR(32)), tenant_id, target_id, in_flight_limit, latency_ms, latency_ms, last_oks, last_busy, paused_until_ms, changed_at_ms FROM s
ON CONFLICT (kind, tenant_id, target_id) DO UPDATE SET
  in_flight_limit = CASE
    WHEN excluded.paused_until_ms IS NOT NULL THEN 0.5
    WHEN excluded.last_busy = 1 OR excluded.latency_ms > 2 * g.base_ms + 50
      THEN GREATEST(CAST($4 AS INTEGER), LEAST(CAST($5 AS INTEGER), g.in_flight_limit) / 2)
    WHEN excluded.last_oks > 0
      THEN LEAST(CAST($5 AS INTEGER), GREATEST(CAST($4 AS INTEGER), g.in_flight_limit) + excluded.last_oks / GREATEST(CAST($4 AS INTEGER), g.in_flight_limit))
    ELSE g.in_flight_limit END,
  base_ms = CASE
    WHEN excluded.latency_ms IS NULL THEN g.base_ms
    WHEN g.base_ms IS NULL OR excluded.latency_ms < g.base_ms THEN excluded.latency_ms
    ELSE g.base_ms + (excluded.latency_ms - g.base_ms) * LEAST(1.0, (excluded.changed_at_ms - g.changed_at_ms) / 30000.0) END,
  latency_ms = COALESCE(excluded.latency_ms, g.latency_ms),
  last_oks = excluded.last_oks,
  last_busy = excluded.last_busy,
  paused_until_ms = CASE WHEN excluded.paused_until_ms IS NULL THEN g.paused_until_ms
    ELSE GREATEST(COALESCE(g.paused_until_ms, 0), excluded.paused_until_ms) END,
  changed_at_ms = excluded.changed_at_ms
RETURNING tenant_id, target_id, in_flight_limit
)
SELECT id, NULL::bigint AS tenant_id, NULL::bigint AS target_id, NULL::double precision AS in_flight_limit FROM recorded
UNION ALL SELECT NULL, tenant_id, target_id, in_flight_limit FROM flow;
END
$fn$;
{{- else}}
-- SQLite runs the claim's and the flush's statements themselves: nothing to define.
SELECT 1;
{{- end}}
