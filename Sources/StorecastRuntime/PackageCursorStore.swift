import PostgresClient

/// Where one rendition of a package stands: its generation, the last segment it finished, and
/// the discontinuity sequence of that segment.
public struct PackageCursor: Sendable, Equatable {
    public var streamKey: String
    public var rendition: String
    public var generation: String
    public var lastSequence: Int
    public var discontinuitySequence: Int

    public init(streamKey: String, rendition: String, generation: String, lastSequence: Int, discontinuitySequence: Int) {
        self.streamKey = streamKey
        self.rendition = rendition
        self.generation = generation
        self.lastSequence = lastSequence
        self.discontinuitySequence = discontinuitySequence
    }
}

/// The packagers' cursors in PostgreSQL (`package_cursors`), so a restarted packager continues
/// its live packages. Calls block: use them on the database thread.
public enum PackageCursorStore {
    /// Cursors a packager wrote within `seconds` (older ones belong to shows long over).
    public static func recent(_ db: PostgresConnection, node: String, within seconds: Int) throws -> [PackageCursor] {
        let rows = try db.execute(
            """
            SELECT stream_key, rendition, generation, last_sequence, discontinuity_sequence FROM package_cursors
            WHERE node = $1 AND updated_at > now() - make_interval(secs => $2)
            """, [node, String(seconds)])
        return (0..<rows.count).compactMap { i in
            guard let key = rows.value(i, "stream_key"), let rendition = rows.value(i, "rendition"), let generation = rows.value(i, "generation"),
                  let last = rows.int(i, "last_sequence"), let cc = rows.int(i, "discontinuity_sequence") else { return nil }
            return PackageCursor(streamKey: key, rendition: rendition, generation: generation, lastSequence: Int(last), discontinuitySequence: Int(cc))
        }
    }

    public static func save(_ db: PostgresConnection, node: String, _ cursors: [PackageCursor]) throws {
        try db.transaction {
            for c in cursors {
                _ = try db.execute(
                    """
                    INSERT INTO package_cursors (node, stream_key, rendition, generation, last_sequence, discontinuity_sequence, updated_at)
                    VALUES ($1, $2, $3, $4, $5, $6, now())
                    ON CONFLICT (node, stream_key, rendition) DO UPDATE SET generation = EXCLUDED.generation,
                        last_sequence = EXCLUDED.last_sequence, discontinuity_sequence = EXCLUDED.discontinuity_sequence, updated_at = now()
                    """, [node, c.streamKey, c.rendition, c.generation, String(c.lastSequence), String(c.discontinuitySequence)])
            }
        }
    }
}
