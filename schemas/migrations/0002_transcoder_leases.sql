-- Which transcoder worker holds each live stream. Ingest's dispatcher grants a lease when it
-- assigns a stream and ends it when the stream ends or moves (worker silent, unreachable,
-- draining). At most one current lease (ended_at IS NULL) per stream.

CREATE TABLE transcoder_leases (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    stream_id   BIGINT NOT NULL REFERENCES streams(id) ON DELETE CASCADE,
    worker_id   TEXT NOT NULL,
    ingest_node TEXT NOT NULL,
    granted_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    ended_at    TIMESTAMPTZ,
    end_reason  TEXT,
    CHECK ((ended_at IS NULL) = (end_reason IS NULL))
);

CREATE UNIQUE INDEX transcoder_leases_current ON transcoder_leases (stream_id) WHERE ended_at IS NULL;
CREATE INDEX transcoder_leases_worker_current ON transcoder_leases (worker_id) WHERE ended_at IS NULL;
CREATE INDEX transcoder_leases_stream_granted ON transcoder_leases (stream_id, granted_at DESC);
