-- An event's title and text as messages (issue 30): a JSON object
-- {"title": <message>, "text": <message>}, each message its key (the
-- English fmt format) and arguments as deskkit.Text writes them, so that a
-- delivery writes the event in the language of the tenant it goes to.
-- title and body keep the English, as before: old binaries and rows read
-- alike. NULL for an event published with plain strings (a host's own) and
-- for every event published before this column: they are delivered as
-- title and body say, in every language.
ALTER TABLE deskkit_outbox_events ADD COLUMN messages TEXT;
