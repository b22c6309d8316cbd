-- The maximum ladder a tenant's plan includes: its largest rendition, as a short side in pixels.
-- Transcoders leave out rungs above it (a ladder profile's or their own) and plan a larger source
-- as if it were that size. The default, 2160, is the largest rung a ladder profile may have: no
-- ceiling until the operator sets one.

ALTER TABLE tenants
    ADD COLUMN max_rendition_short_side INTEGER NOT NULL DEFAULT 2160 CHECK (max_rendition_short_side BETWEEN 144 AND 2160);
