-- Recording: a stream with record = true has each live session written to disk by the
-- packager that serves it; one row per recorded session.

ALTER TABLE streams ADD COLUMN record BOOLEAN NOT NULL DEFAULT false;

CREATE TABLE recordings (
    id               BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    stream_id        BIGINT NOT NULL REFERENCES streams(id) ON DELETE CASCADE,
    packager_node    TEXT NOT NULL,
    -- Directory holding master.m3u8 and one folder per rendition.
    path             TEXT NOT NULL DEFAULT '',
    state            TEXT NOT NULL DEFAULT 'recording' CHECK (state IN ('recording', 'ready', 'failed')),
    error            TEXT,
    duration_seconds DOUBLE PRECISION,
    bytes            BIGINT NOT NULL DEFAULT 0,
    started_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
    ended_at         TIMESTAMPTZ,
    CHECK ((state = 'failed') = (error IS NOT NULL))
);

CREATE INDEX recordings_stream_started ON recordings (stream_id, started_at DESC);
CREATE INDEX recordings_open ON recordings (packager_node) WHERE state = 'recording';
