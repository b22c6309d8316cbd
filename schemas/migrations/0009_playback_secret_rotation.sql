-- A tenant's playback secret can be rotated with a grace period: tokens signed with the
-- previous secret keep playing until previous_playback_secret_until.

ALTER TABLE tenants
    ADD COLUMN previous_playback_secret TEXT,
    ADD COLUMN previous_playback_secret_until TIMESTAMPTZ;
