-- Ladder profiles: how a tenant's streams are transcoded (rungs with bitrates, x264 preset, GOP
-- length, low-latency tune). A stream uses its own profile, else its tenant's default, else the
-- transcoder's settings (the field ladder).

CREATE TABLE ladder_profiles (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id   BIGINT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    name        TEXT NOT NULL CHECK (name ~ '^[a-z0-9][a-z0-9-]{0,62}$'),
    -- [{"name": "720p", "shortSide": 720, "bitrate": 2000000}, …], largest first.
    rungs       JSONB NOT NULL CHECK (jsonb_typeof(rungs) = 'array' AND jsonb_array_length(rungs) BETWEEN 1 AND 8),
    preset      TEXT NOT NULL DEFAULT 'veryfast'
                CHECK (preset IN ('ultrafast', 'superfast', 'veryfast', 'faster', 'fast', 'medium')),
    gop_seconds SMALLINT NOT NULL DEFAULT 2 CHECK (gop_seconds IN (1, 2)),
    low_latency BOOLEAN NOT NULL DEFAULT true,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, name)
);

ALTER TABLE tenants ADD COLUMN ladder_profile_id BIGINT REFERENCES ladder_profiles(id) ON DELETE SET NULL;
ALTER TABLE streams ADD COLUMN ladder_profile_id BIGINT REFERENCES ladder_profiles(id) ON DELETE SET NULL;
