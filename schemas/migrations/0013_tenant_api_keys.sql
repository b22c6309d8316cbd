-- Tenants' own API keys (issue 16), and the operator's suspension of a tenant.
--
-- A key is `sck_<id>_<secret>`: the id (12 lowercase letters and digits) is public and names the
-- row; only the SHA-256 of the secret is kept, so a key is shown once, at creation. A key acts on
-- its own tenant only, within its scopes. A revoked key, or any key of a suspended tenant, is
-- refused.

ALTER TABLE tenants ADD COLUMN suspended_at TIMESTAMPTZ;

CREATE TABLE api_keys (
    id           TEXT PRIMARY KEY CHECK (id ~ '^[a-z0-9]{12}$'),
    tenant_id    BIGINT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    name         TEXT NOT NULL DEFAULT '' CHECK (length(name) <= 100),
    secret_hash  TEXT NOT NULL CHECK (secret_hash ~ '^[0-9a-f]{64}$'),
    scopes       TEXT[] NOT NULL CHECK (cardinality(scopes) > 0 AND scopes <@ ARRAY[
                     'streams:read', 'streams:write', 'playback:sign', 'recordings', 'webhooks', 'highlights']::TEXT[]),
    -- 'operator', or the id of the tenant's key that made it.
    created_by   TEXT NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    last_used_at TIMESTAMPTZ,
    revoked_at   TIMESTAMPTZ
);

CREATE INDEX api_keys_tenant ON api_keys (tenant_id, created_at);
