-- Tenants (brands, shops), their streams and every publish session.

CREATE TABLE tenants (
    id                     BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    slug                   TEXT NOT NULL UNIQUE CHECK (slug ~ '^[a-z0-9][a-z0-9-]{0,62}$'),
    name                   TEXT NOT NULL,
    max_concurrent_streams INTEGER NOT NULL DEFAULT 10 CHECK (max_concurrent_streams >= 0),
    created_at             TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE streams (
    id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id       BIGINT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    slug            TEXT NOT NULL CHECK (slug ~ '^[a-z0-9][a-z0-9-]{0,62}$'),
    title           TEXT NOT NULL DEFAULT '',
    -- SHA-256 of the stream key, hex. The key itself is shown once, at creation.
    stream_key_hash TEXT NOT NULL UNIQUE CHECK (stream_key_hash ~ '^[0-9a-f]{64}$'),
    -- First characters of the key, so operators can tell keys apart without storing them.
    key_prefix      TEXT NOT NULL,
    status          TEXT NOT NULL DEFAULT 'idle' CHECK (status IN ('idle', 'live', 'reconnecting', 'ended')),
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, slug)
);

CREATE TABLE sessions (
    id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    stream_id     BIGINT NOT NULL REFERENCES streams(id) ON DELETE CASCADE,
    ingest_node   TEXT NOT NULL,
    remote_addr   TEXT NOT NULL,
    client        TEXT,
    video_codec   TEXT,
    audio_codec   TEXT,
    width         INTEGER,
    height        INTEGER,
    frame_rate    DOUBLE PRECISION,
    started_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    ended_at      TIMESTAMPTZ,
    end_reason    TEXT
);

CREATE INDEX sessions_stream_started ON sessions (stream_id, started_at DESC);
CREATE INDEX sessions_open ON sessions (stream_id) WHERE ended_at IS NULL;

-- Service nodes that announce themselves (ingest, packager, …) so others can find them.
CREATE TABLE nodes (
    id         TEXT PRIMARY KEY,
    service    TEXT NOT NULL,
    endpoint   TEXT NOT NULL,
    public_url TEXT,
    last_seen  TIMESTAMPTZ NOT NULL DEFAULT now()
);
