-- A stream key can be rotated (issue 16): the new key is shown once; the previous one keeps
-- publishing until previous_key_until (the caller's grace period, 0 by default).

ALTER TABLE streams
    ADD COLUMN previous_key_hash TEXT CHECK (previous_key_hash ~ '^[0-9a-f]{64}$'),
    ADD COLUMN previous_key_until TIMESTAMPTZ;

CREATE INDEX streams_previous_key ON streams (previous_key_hash) WHERE previous_key_hash IS NOT NULL;
