-- Fair share: the largest source a tenant may publish (short side in pixels, frames per
-- second). A publish over either is refused with the reason. The defaults fit the ladder's top
-- rung (1080p) at 60 fps.

ALTER TABLE tenants
    ADD COLUMN max_source_short_side INTEGER NOT NULL DEFAULT 1080 CHECK (max_source_short_side BETWEEN 144 AND 4320),
    ADD COLUMN max_source_frame_rate DOUBLE PRECISION NOT NULL DEFAULT 60 CHECK (max_source_frame_rate BETWEEN 1 AND 240);
