-- Fair share of disk: what a tenant may keep in recordings and DVR media. A recording that
-- reaches the quota stops there and stays playable ('truncated', with the reason); one that
-- starts with the quota used up records nothing ('failed', with the reason). The default,
-- 100 GiB, is about 37 hours of the full ladder.

ALTER TABLE tenants
    ADD COLUMN storage_quota_bytes BIGINT NOT NULL DEFAULT 107374182400 CHECK (storage_quota_bytes >= 0);

-- 'truncated' joins the recording states; it carries its reason as 'failed' does.
DO $$
DECLARE c TEXT;
BEGIN
    FOR c IN SELECT conname FROM pg_constraint WHERE conrelid = 'recordings'::regclass AND contype = 'c' LOOP
        EXECUTE format('ALTER TABLE recordings DROP CONSTRAINT %I', c);
    END LOOP;
END $$;

ALTER TABLE recordings
    ADD CONSTRAINT recordings_state_check CHECK (state IN ('recording', 'ready', 'truncated', 'failed')),
    ADD CONSTRAINT recordings_error_check CHECK ((state IN ('failed', 'truncated')) = (error IS NOT NULL));
