-- The restream quota a tenant's plan includes: how many restream targets (RTMP or RTMPS
-- destinations such as YouTube or Twitch) each of its shows may send to at once. 3 by default, the
-- field's practice for live commerce; 0 turns restreaming off for the tenant. The operator sets it
-- with the tenant's other quotas, ahead of restream (its targets and the relay that sends to them),
-- which is not built yet and is to refuse a target past it.

ALTER TABLE tenants
    ADD COLUMN max_restream_targets INTEGER NOT NULL DEFAULT 3 CHECK (max_restream_targets BETWEEN 0 AND 10);
