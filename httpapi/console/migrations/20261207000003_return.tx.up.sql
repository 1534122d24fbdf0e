-- The host's page a portal session goes back to ("Back to <product>"):
-- the URL its links carried, checked against Config.HostOrigins when the
-- link was issued and again when a page shows it; '' for none.
ALTER TABLE deskkit_console_sessions ADD COLUMN return_url VARCHAR(2048) NOT NULL DEFAULT '';
