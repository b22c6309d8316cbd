-- Product highlights (issue 18): a card a seller's back end posts while a show is live. Each
-- belongs to the session it was posted in and starts at the moment the API received it (its
-- own clock, in step with the packagers' by NTP), which is the program date-time of the frame
-- that was live then. The packager of the stream writes it into every rendition's media
-- playlists as an EXT-X-DATERANGE.

CREATE TABLE highlights (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    stream_id    BIGINT NOT NULL REFERENCES streams(id) ON DELETE CASCADE,
    session_id   BIGINT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    product_id   TEXT NOT NULL,
    title        TEXT NOT NULL,
    price        TEXT,
    currency     TEXT,
    image_url    TEXT,
    link         TEXT,
    -- Seconds the card shows; NULL: until the next card of the show.
    duration_ms  INTEGER CHECK (duration_ms BETWEEN 1 AND 3600000),
    starts_at    TIMESTAMPTZ NOT NULL,
    created_by   TEXT NOT NULL,
    -- The database's clock when the row was written: packagers read new cards by it.
    created_at   TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp()
);

CREATE INDEX highlights_stream ON highlights (stream_id, starts_at);
CREATE INDEX highlights_created ON highlights (created_at);
