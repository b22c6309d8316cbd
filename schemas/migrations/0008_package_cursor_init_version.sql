-- The init segment version each rendition had reached: a resumed package starts its init
-- segments after it (init.mp4 is immutable; a rendition reconfigured before the restart had
-- already moved on to init-N.mp4).
ALTER TABLE package_cursors ADD COLUMN init_version INTEGER NOT NULL DEFAULT 0;
