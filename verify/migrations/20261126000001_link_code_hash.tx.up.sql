-- A link secret remembers the code whose check answered it (its keyed hash,
-- as deskkit_verify_codes keeps it), so that a BIND_* change that carries
-- both the code and the secret is accepted only when they belong together.
-- NULL for secrets won before this column: they pass alone, not in a pair.
ALTER TABLE deskkit_verify_links ADD COLUMN code_hash VARCHAR(64);
