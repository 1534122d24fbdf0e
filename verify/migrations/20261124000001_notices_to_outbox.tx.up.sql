-- Notices to old addresses move to the module's outbox (deskkit_outbox_*,
-- which verify.Migrate creates first), whose workers claim each delivery
-- before they send it: the notices table was read without claiming, so
-- that every replica could send the same notice. Notices still waiting
-- here become deliveries of kind 'verify.notice', due at once, with the
-- attempts they had made counted against the notices' schedule of five;
-- then the table goes.
--
-- Each notice gets an event of its own, as a change makes it; its id is
-- unlike those of NewEventID (msg_ and 26 base32 characters, no '_'), so
-- that it collides with none.
INSERT INTO deskkit_outbox_events (tenant_id, event_id, event_type, occurred_at_ms, title, body, data, created_at_ms)
SELECT tenant_id, 'msg_verify_notice_' || CAST(id AS VARCHAR(20)), 'verify.notice', created_at_ms,
       CASE kind WHEN 'SMS' THEN 'Notice of a changed mobile number' ELSE 'Notice of a changed e-mail address' END,
       '', '{}', created_at_ms
FROM deskkit_verify_notices;
--bun:split
INSERT INTO deskkit_outbox_deliveries (tenant_id, event_id, kind, target_id, payload, status, attempts, step, due_at_ms, created_at_ms)
SELECT tenant_id, 'msg_verify_notice_' || CAST(id AS VARCHAR(20)), 'verify.notice', user_id,
{{- if .Postgres}}
       json_build_object('kind', kind, 'bizKey', biz_key, 'address', address, 'newAddress', new_address)::text,
{{- else}}
       json_object('kind', kind, 'bizKey', biz_key, 'address', address, 'newAddress', new_address),
{{- end}}
       'PENDING', attempts, CASE WHEN attempts > 4 THEN 4 ELSE attempts END, created_at_ms, created_at_ms
FROM deskkit_verify_notices;
--bun:split
DROP TABLE deskkit_verify_notices;
