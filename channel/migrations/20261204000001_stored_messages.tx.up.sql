-- A channel's disabled reason is kept as a message too (issue 30):
-- disabled_reason_json holds its key and arguments (deskkit.Text's JSON),
-- which List and Get write in their reader's language, the far end's words
-- inside as they came. disabled_reason keeps its English: what an older
-- deskkit reads (a rollback shows English), the channel.disabled event's
-- reason, and the one text of channels disabled before. NULL while the
-- channel is enabled, and for channels disabled before.
ALTER TABLE deskkit_channels ADD COLUMN disabled_reason_json TEXT;
