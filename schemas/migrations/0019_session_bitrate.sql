-- The source's bitrate as ingest measured it last: its media (audio and video) over 5 s of
-- stream time, in bits per second. Updated every 5 s while the session is open; the last figure
-- stays when it ends.

ALTER TABLE sessions
    ADD COLUMN bitrate INTEGER CHECK (bitrate >= 0);
