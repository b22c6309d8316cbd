-- The shoppers' stories feed (issue 18). A tenant pins shows to the top of its feed and orders
-- the rest by viewers or by start time. Each live stream keeps a tiny blurred placeholder of its
-- picture (a 16x9 JPEG as a data URL, a few hundred bytes), written by its packager from the
-- transcoder's, so a feed's first paint needs no request.

ALTER TABLE streams
    ADD COLUMN feed_pinned BOOLEAN NOT NULL DEFAULT false,
    ADD COLUMN placeholder TEXT CHECK (length(placeholder) <= 4096);

ALTER TABLE tenants
    ADD COLUMN feed_order TEXT NOT NULL DEFAULT 'viewers' CHECK (feed_order IN ('viewers', 'started'));

CREATE INDEX streams_live ON streams (tenant_id) WHERE status = 'live';
