ALTER TABLE deskkit_verify_links DROP COLUMN code_hash;
