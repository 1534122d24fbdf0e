-- What an attempt sent and what came back besides the reply's body, for
-- the inspection of a delivery (issue 32). exchange is a JSON object the
-- kind's handler writes: the request's method, its address as a reader
-- who may not see addresses sees it, its headers (signatures and secrets
-- masked), the language it was written in, the key of its body in
-- deskkit_outbox_bodies ("" when the body is the event's own), and the
-- reply's headers, masked as the reply's body is. NULL for attempts
-- recorded before it, and for those that sent nothing.
ALTER TABLE deskkit_outbox_attempts ADD COLUMN exchange TEXT;
--bun:split
-- The bodies sent, once per rendering rather than per attempt: a robot's
-- or an e-mail's message, once per event and language (and channel name,
-- where the kind writes it); body_key is the SHA-256 of the body, in
-- hex. A webhook's body is the event's (type, occurred_at_ms and data of
-- deskkit_outbox_events) and is not kept again. Purged with the events.
CREATE TABLE deskkit_outbox_bodies (
    tenant_id     BIGINT       NOT NULL,
    event_id      VARCHAR(100) NOT NULL,
    body_key      VARCHAR(64)  NOT NULL,
    body          TEXT         NOT NULL,
    created_at_ms BIGINT       NOT NULL,
    PRIMARY KEY (tenant_id, event_id, body_key)
);
--bun:split
CREATE INDEX deskkit_outbox_bodies_created_idx ON deskkit_outbox_bodies (created_at_ms);
{{- if .Postgres}}
--bun:split
-- Written once and deleted by age, as deskkit_outbox_events (see
-- 20261202000002_lean_tables).
ALTER TABLE deskkit_outbox_bodies SET (
    autovacuum_vacuum_scale_factor = 0.05,
    autovacuum_vacuum_insert_scale_factor = 0.05
);
{{- end}}
