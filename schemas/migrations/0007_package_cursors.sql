-- Where each packager's renditions stand on their media timeline, written about once a second
-- while they are live: a packager restarted mid-show (kill -9, a deploy, systemd or Kubernetes)
-- continues the same generation after the last segment it served, with a discontinuity, so
-- players that keep reloading the media playlists they had go on at the new live edge instead
-- of meeting a 404 or immutable URLs that name other bytes.
CREATE TABLE package_cursors (
    node TEXT NOT NULL,
    stream_key TEXT NOT NULL,
    rendition TEXT NOT NULL,
    generation TEXT NOT NULL,
    last_sequence BIGINT NOT NULL,
    discontinuity_sequence BIGINT NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (node, stream_key, rendition)
);
