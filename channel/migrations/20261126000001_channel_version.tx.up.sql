-- version counts the changes to what a delivery uses (type, name, address,
-- secret, enabled): every statement that changes one of them adds 1, so
-- that the worker's cache of opened (decrypted) channels sees the change
-- at its next claim by comparing versions, without decrypting again what
-- did not change. updated_at_ms cannot tell two changes within one
-- millisecond apart. The failure clock (failing_since_ms,
-- failed_attempts) changes nothing sent and leaves it alone.
ALTER TABLE deskkit_channels ADD COLUMN version BIGINT NOT NULL DEFAULT 1;
