-- A stream's settings a tenant changes with PATCH (issue 16): the latency its players get
-- ('low': LL-HLS parts and blocking reloads; 'standard': whole segments only) and how long a
-- publisher that dropped has to reconnect and continue its session (NULL: the ingest's
-- --reconnect-window).

ALTER TABLE streams
    ADD COLUMN latency_mode TEXT NOT NULL DEFAULT 'low' CHECK (latency_mode IN ('low', 'standard')),
    ADD COLUMN reconnect_window_seconds INTEGER CHECK (reconnect_window_seconds BETWEEN 0 AND 300);

-- Recordings (and streams) a tenant deleted: the row goes at once, which frees the tenant's
-- quota; the packager that wrote the files removes them, rebuilding the directory from these
-- names under its own --recordings-dir (nothing here is a path), then drops the row.
CREATE TABLE recording_deletions (
    recording_id  BIGINT PRIMARY KEY,
    packager_node TEXT NOT NULL,
    tenant        TEXT NOT NULL,
    stream        TEXT NOT NULL,
    requested_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    -- Removal failed this often (a permission, a disk error): tried again after a growing wait.
    attempts      INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE INDEX recording_deletions_node ON recording_deletions (packager_node, next_attempt_at);
