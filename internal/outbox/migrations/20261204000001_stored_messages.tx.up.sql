-- An attempt's error and a delivery's last error are kept as messages
-- too (issue 30): error_json and last_error_json hold the message's key
-- and arguments (deskkit.Text's JSON), which readers write in their own
-- language, beside its English in error and last_error, which older
-- deskkit versions read (a rollback shows English) and which stays the
-- one text of rows written before, and of an error too long to keep
-- whole. NULL where the row has no message.
ALTER TABLE deskkit_outbox_deliveries ADD COLUMN last_error_json TEXT;
--bun:split
ALTER TABLE deskkit_outbox_attempts ADD COLUMN error_json TEXT;
