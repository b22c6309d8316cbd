-- Which packager serves a stream's current session (chosen by ingest with rendezvous hashing
-- over the live packagers in `nodes`); the API sends players there.
ALTER TABLE streams ADD COLUMN origin_node TEXT;
CREATE INDEX nodes_service_seen ON nodes (service, last_seen DESC);
