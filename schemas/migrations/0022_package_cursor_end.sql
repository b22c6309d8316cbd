-- Where the last recorded segment ends on the package's clock (seconds since 1970, its
-- PROGRAM-DATE-TIME plus its duration): a restarted packager lists the media lost between
-- there and its own first segment as EXT-X-GAP segments, so every player can step over it.

ALTER TABLE package_cursors ADD COLUMN last_end DOUBLE PRECISION;
