-- Every event recorded in the outbox (`webhook_events`, written by `storecast_emit`) is also
-- announced on the channel `storecast_events` (NOTIFY, delivered at the transaction's commit),
-- so the API's readers of the outbox (the stream events its players and tenants wait on, and the
-- webhook dispatcher) wake when one is written instead of waiting for their next poll. The
-- payload is the event's type. An event recorded once already (its dedupe key taken) is not
-- inserted, so it announces nothing.

CREATE FUNCTION storecast_announce_event() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('storecast_events', NEW.type);
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER webhook_events_announced AFTER INSERT ON webhook_events
    FOR EACH ROW EXECUTE FUNCTION storecast_announce_event();
