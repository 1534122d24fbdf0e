-- The notices table again, with the notices the outbox has not sent yet
-- (those in flight too: rolling back is done with the workers stopped).
CREATE TABLE deskkit_verify_notices (
    id            {{.Identity}},
    tenant_id     BIGINT       NOT NULL,
    user_id       BIGINT       NOT NULL,
    kind          VARCHAR(8)   NOT NULL,
    biz_key       VARCHAR(64)  NOT NULL,
    address       VARCHAR(254) NOT NULL,
    -- The new address, masked as the notice shows it.
    new_address   VARCHAR(254) NOT NULL,
    created_at_ms BIGINT       NOT NULL,
    attempts      INTEGER      NOT NULL DEFAULT 0
);
--bun:split
INSERT INTO deskkit_verify_notices (tenant_id, user_id, kind, biz_key, address, new_address, created_at_ms, attempts)
SELECT tenant_id, target_id,
{{- if .Postgres}}
       payload::json->>'kind', payload::json->>'bizKey', payload::json->>'address', payload::json->>'newAddress',
{{- else}}
       json_extract(payload, '$.kind'), json_extract(payload, '$.bizKey'), json_extract(payload, '$.address'), json_extract(payload, '$.newAddress'),
{{- end}}
       created_at_ms, attempts
FROM deskkit_outbox_deliveries
WHERE kind = 'verify.notice' AND status = 'PENDING'
ORDER BY id;
--bun:split
DELETE FROM deskkit_outbox_attempts WHERE delivery_id IN (SELECT id FROM deskkit_outbox_deliveries WHERE kind = 'verify.notice');
--bun:split
DELETE FROM deskkit_outbox_deliveries WHERE kind = 'verify.notice';
--bun:split
DELETE FROM deskkit_outbox_events WHERE event_type = 'verify.notice';
