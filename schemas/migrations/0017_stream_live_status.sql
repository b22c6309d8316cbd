-- A stream's live status as its packager sees it (issue 16), for GET of a stream: its health
-- (with the reasons, as stream.health_changed reports it), its renditions, and its viewers.
-- Health and renditions name the session they belong to; the API shows them for the open one.

ALTER TABLE streams
    ADD COLUMN health TEXT CHECK (health IN ('healthy', 'degraded', 'unhealthy')),
    ADD COLUMN health_reasons JSONB NOT NULL DEFAULT '[]',
    ADD COLUMN health_changed_at TIMESTAMPTZ,
    ADD COLUMN health_session BIGINT,
    ADD COLUMN renditions JSONB NOT NULL DEFAULT '[]',
    ADD COLUMN renditions_session BIGINT,
    ADD COLUMN viewers INTEGER NOT NULL DEFAULT 0 CHECK (viewers >= 0),
    ADD COLUMN viewers_at TIMESTAMPTZ;
