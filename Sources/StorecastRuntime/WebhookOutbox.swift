import Foundation
import PostgresClient

/// Events for tenants' webhooks (issue 16), recorded in PostgreSQL in the same transaction as
/// the change they report (the outbox, migration 0014's `storecast_emit`), so an event is never
/// lost and never sent for a change that rolled back. The API's dispatcher delivers them.
///
/// Every body is `{"type", "timestamp", "data"}`; a stream event's data carries `tenant`,
/// `stream`, `streamId`, `sessionId` and the event's own fields.
public enum WebhookOutbox {
    /// The channel every recorded event is announced on (a trigger's NOTIFY, delivered at the
    /// commit; migration 0023), which the API's readers of the outbox LISTEN to (`PostgresListener`).
    public static let channel = "storecast_events"

    public static let eventTypes = [
        "stream.connected", "stream.live", "stream.reconnecting", "stream.ended", "stream.health_changed",
        "recording.ready", "recording.failed",
    ]

    /// Records `type` about stream `streamID`, with `fields` added to its data. `once`: a key
    /// under which it is recorded at most once.
    public static func streamEvent(_ conn: PostgresConnection, _ type: String, streamID: Int64, sessionID: Int64?,
                                   fields: some Encodable = [String: String](), once: String? = nil) throws {
        let extra = String(decoding: try JSONEncoder().encode(fields), as: UTF8.self)
        try conn.execute(
            """
            SELECT storecast_emit(s.tenant_id, $1, jsonb_build_object('tenant', t.slug, 'stream', s.slug, 'streamId', s.id, 'sessionId', $3::bigint) || $4::jsonb, $5)
            FROM streams s JOIN tenants t ON t.id = s.tenant_id WHERE s.id = $2
            """, [type, String(streamID), sessionID.map(String.init), extra, once])
    }
}
