-- A webhook's custom HTTP headers (issue 32): at most 10 name and value
-- pairs, sent with every request. Their values may be secrets (an
-- Authorization token), so the list is stored sealed as the address and
-- the secret are: AES-256-GCM under the server secret, bound to the row's
-- tenant, type and its own field ("headers"), a JSON list of [name, value]
-- pairs inside. NULL for none.
ALTER TABLE deskkit_channels ADD COLUMN headers_enc TEXT;
