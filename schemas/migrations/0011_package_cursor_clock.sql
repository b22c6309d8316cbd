-- Where the package's stream time sits on the wall clock (PROGRAM-DATE-TIME minus stream
-- seconds): a resumed package keeps it, so its PROGRAM-DATE-TIME runs on without a jump and
-- players that align playlists by it (hls.js) find the next segment right after their buffer.
ALTER TABLE package_cursors ADD COLUMN clock_offset DOUBLE PRECISION;
