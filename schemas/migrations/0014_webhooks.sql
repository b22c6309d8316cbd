-- Webhooks (issue 16): tenants' endpoints, an outbox of events written in the same transaction
-- as the state change they report, and one delivery row per event and endpoint, which the API's
-- dispatcher sends, retries and logs (Standard Webhooks: webhook-id, webhook-timestamp,
-- webhook-signature).

CREATE TABLE webhook_endpoints (
    id                     TEXT PRIMARY KEY CHECK (id ~ '^ep_[a-z0-9]{16}$'),
    tenant_id              BIGINT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    url                    TEXT NOT NULL CHECK (url ~ '^https?://' AND length(url) <= 2048),
    description            TEXT NOT NULL DEFAULT '' CHECK (length(description) <= 200),
    -- Empty: every event type.
    event_types            TEXT[] NOT NULL DEFAULT '{}',
    -- whsec_<base64>; the previous one is also signed with until previous_secret_until.
    secret                 TEXT NOT NULL CHECK (secret ~ '^whsec_'),
    previous_secret        TEXT,
    previous_secret_until  TIMESTAMPTZ,
    -- Set when the receiver answered 410 Gone (or the operator or tenant turned it off).
    disabled_at            TIMESTAMPTZ,
    disabled_reason        TEXT,
    created_at             TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX webhook_endpoints_tenant ON webhook_endpoints (tenant_id);

CREATE TABLE webhook_events (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id   BIGINT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    type        TEXT NOT NULL,
    -- {"type", "timestamp", "data"}: the body every endpoint receives, byte for byte.
    body        TEXT NOT NULL,
    -- Set for events that must be recorded once (stream.live per session, whichever packager
    -- or restart reports it).
    dedupe_key  TEXT UNIQUE,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX webhook_events_tenant ON webhook_events (tenant_id, id);
-- The event feed re-reads the last seconds (events commit out of id order); pruning goes by age.
CREATE INDEX webhook_events_created ON webhook_events (created_at);

CREATE TABLE webhook_deliveries (
    id               BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id         BIGINT NOT NULL REFERENCES webhook_events(id) ON DELETE CASCADE,
    endpoint_id      TEXT NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
    state            TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts         INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    -- A dispatcher holds a delivery while it sends it; a dispatcher that died lets go when this passes.
    locked_until     TIMESTAMPTZ,
    last_status      INTEGER,
    last_error       TEXT,
    last_attempt_at  TIMESTAMPTZ,
    delivered_at     TIMESTAMPTZ
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (endpoint_id, next_attempt_at) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, id);
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id);

-- Records an event of the tenant and a pending delivery for each of its endpoints that takes
-- the type; nothing when p_dedupe names an event already recorded. Call it in the transaction
-- that makes the change the event reports.
CREATE FUNCTION storecast_emit(p_tenant BIGINT, p_type TEXT, p_data JSONB, p_dedupe TEXT DEFAULT NULL) RETURNS BIGINT AS $$
DECLARE
    event_id BIGINT;
BEGIN
    INSERT INTO webhook_events (tenant_id, type, body, dedupe_key)
    VALUES (p_tenant, p_type, jsonb_build_object(
        'type', p_type,
        'timestamp', to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        'data', p_data)::text, p_dedupe)
    ON CONFLICT (dedupe_key) DO NOTHING
    RETURNING id INTO event_id;
    IF event_id IS NULL THEN
        RETURN NULL;
    END IF;
    INSERT INTO webhook_deliveries (event_id, endpoint_id)
    SELECT event_id, e.id FROM webhook_endpoints e
    WHERE e.tenant_id = p_tenant AND e.disabled_at IS NULL
      AND (cardinality(e.event_types) = 0 OR p_type = ANY (e.event_types));
    RETURN event_id;
END;
$$ LANGUAGE plpgsql;
