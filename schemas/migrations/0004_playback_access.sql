-- Private streams and signed playback (HMAC-SHA256 per tenant; see PlaybackToken.swift).

ALTER TABLE tenants
    -- 64 hex characters from two random UUIDs (PostgreSQL's strong random) through SHA-256.
    ADD COLUMN playback_secret TEXT NOT NULL
        DEFAULT encode(sha256((gen_random_uuid()::text || gen_random_uuid()::text)::bytea), 'hex');

ALTER TABLE streams
    ADD COLUMN visibility TEXT NOT NULL DEFAULT 'public' CHECK (visibility IN ('public', 'private'));
