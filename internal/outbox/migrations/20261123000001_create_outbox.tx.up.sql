-- The outbox shared by every service: events, one delivery row per place an
-- event goes, and every attempt. Times are Unix milliseconds (BIGINT), as in
-- the other deskkit tables.
--
-- Events: what was published, once per tenant and id (the idempotency key,
-- and the webhook-id receivers deduplicate on). data is the JSON object sent
-- as the webhook's "data".
CREATE TABLE deskkit_outbox_events (
    tenant_id      BIGINT       NOT NULL,
    event_id       VARCHAR(100) NOT NULL,
    event_type     VARCHAR(100) NOT NULL,
    occurred_at_ms BIGINT       NOT NULL,
    title          TEXT         NOT NULL,
    body           TEXT         NOT NULL,
    data           TEXT         NOT NULL,
    created_at_ms  BIGINT       NOT NULL,
    PRIMARY KEY (tenant_id, event_id)
);
--bun:split
CREATE INDEX deskkit_outbox_events_created_idx ON deskkit_outbox_events (created_at_ms);
--bun:split
-- Deliveries: one event to one target of a kind ("channel": a channel's id;
-- "verify.notice": a user's id, with the old address in payload).
--
-- status is PENDING until the delivery SUCCEEDED or FAILED for good. A
-- PENDING row is due at due_at_ms; a worker that claims it moves due_at_ms
-- to the end of its lease and sets lease_token, so that a worker that dies
-- mid-attempt loses the row to another when the lease ends, and a late
-- outcome of the dead worker (its token no longer matching) is dropped.
-- step is the position in the retry schedule of the attempt being waited
-- for. An event's deliveries are written once, with the event (Enqueue
-- writes them only when the event is new), so no unique index is kept on
-- them: each would cost every publish an index entry per delivery.
CREATE TABLE deskkit_outbox_deliveries (
    id               {{.Identity}},
    tenant_id        BIGINT       NOT NULL,
    event_id         VARCHAR(100) NOT NULL,
    kind             VARCHAR(32)  NOT NULL,
    target_id        BIGINT       NOT NULL,
    payload          TEXT,
    status           VARCHAR(16)  NOT NULL,
    attempts         INTEGER      NOT NULL,
    step             INTEGER      NOT NULL,
    due_at_ms        BIGINT,
    lease_token      VARCHAR(40),
    last_status_code INTEGER,
    last_error       TEXT,
    created_at_ms    BIGINT       NOT NULL,
    finished_at_ms   BIGINT
);
--bun:split
-- The claim reads due deliveries of one kind in due order: a partial index
-- holds only the PENDING rows, so its size is the queue's, not the log's.
CREATE INDEX deskkit_outbox_due_idx ON deskkit_outbox_deliveries (kind, due_at_ms) WHERE status = 'PENDING';
--bun:split
-- A target's deliveries, newest first (the deliveries API, recover).
CREATE INDEX deskkit_outbox_target_idx ON deskkit_outbox_deliveries (tenant_id, kind, target_id, id);
--bun:split
-- Housekeeping finds finished deliveries by age.
CREATE INDEX deskkit_outbox_finished_idx ON deskkit_outbox_deliveries (finished_at_ms) WHERE finished_at_ms IS NOT NULL;
--bun:split
-- Attempts: every attempt's outcome, kept as long as its delivery.
CREATE TABLE deskkit_outbox_attempts (
    delivery_id   BIGINT  NOT NULL,
    attempt_no    INTEGER NOT NULL,
    started_at_ms BIGINT  NOT NULL,
    duration_ms   BIGINT  NOT NULL,
    status_code   INTEGER,
    error         TEXT,
    response      TEXT,
    PRIMARY KEY (delivery_id, attempt_no)
);
--bun:split
CREATE INDEX deskkit_outbox_attempts_started_idx ON deskkit_outbox_attempts (started_at_ms);
