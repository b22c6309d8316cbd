import PostgresClient

/// Where one rendition of a package stands: its generation, the last segment it finished, and
/// the discontinuity sequence of that segment.
public struct PackageCursor: Sendable, Equatable {
    public var streamKey: String
    public var rendition: String
    public var generation: String
    public var lastSequence: Int
    public var discontinuitySequence: Int
    /// The rendition's current init segment version (init.mp4 is 0, init-N.mp4 is N).
    public var initVersion: Int
    /// Seconds since it was written (when read back).
    public var age: Double
    /// The package's PROGRAM-DATE-TIME minus its stream time, in seconds (nil: not known).
    public var clockOffset: Double?
    /// Where the last recorded segment ends on the package's clock: its PROGRAM-DATE-TIME plus
    /// its duration, seconds since 1970 (nil: not known).
    public var lastEnd: Double?

    public init(streamKey: String, rendition: String, generation: String, lastSequence: Int, discontinuitySequence: Int, initVersion: Int = 0, age: Double = 0, clockOffset: Double? = nil,
                lastEnd: Double? = nil) {
        self.clockOffset = clockOffset
        self.lastEnd = lastEnd
        self.streamKey = streamKey
        self.rendition = rendition
        self.generation = generation
        self.lastSequence = lastSequence
        self.discontinuitySequence = discontinuitySequence
        self.initVersion = initVersion
        self.age = age
    }
}

/// The packagers' cursors in PostgreSQL (`package_cursors`), so a restarted packager continues
/// its live packages. Calls block: use them on the database thread.
public enum PackageCursorStore {
    /// Cursors a packager wrote within `seconds` (older ones belong to shows long over).
    public static func recent(_ db: PostgresConnection, node: String, within seconds: Int) throws -> [PackageCursor] {
        let rows = try db.execute(
            """
            SELECT stream_key, rendition, generation, last_sequence, discontinuity_sequence, init_version, clock_offset, last_end,
                   EXTRACT(EPOCH FROM now() - updated_at) AS age FROM package_cursors
            WHERE node = $1 AND updated_at > now() - make_interval(secs => $2)
            """, [node, String(seconds)])
        return (0..<rows.count).compactMap { i in
            guard let key = rows.value(i, "stream_key"), let rendition = rows.value(i, "rendition"), let generation = rows.value(i, "generation"),
                  let last = rows.int(i, "last_sequence"), let cc = rows.int(i, "discontinuity_sequence"), let version = rows.int(i, "init_version"),
                  let age = rows.value(i, "age").flatMap(Double.init) else { return nil }
            return PackageCursor(streamKey: key, rendition: rendition, generation: generation, lastSequence: Int(last), discontinuitySequence: Int(cc),
                                 initVersion: Int(version), age: age, clockOffset: rows.value(i, "clock_offset").flatMap(Double.init),
                                 lastEnd: rows.value(i, "last_end").flatMap(Double.init))
        }
    }

    public static func save(_ db: PostgresConnection, node: String, _ cursors: [PackageCursor]) throws {
        try db.transaction {
            for c in cursors {
                _ = try db.execute(
                    """
                    INSERT INTO package_cursors (node, stream_key, rendition, generation, last_sequence, discontinuity_sequence, init_version, clock_offset, last_end, updated_at)
                    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, now())
                    ON CONFLICT (node, stream_key, rendition) DO UPDATE SET generation = EXCLUDED.generation,
                        last_sequence = EXCLUDED.last_sequence, discontinuity_sequence = EXCLUDED.discontinuity_sequence,
                        init_version = EXCLUDED.init_version, clock_offset = EXCLUDED.clock_offset, last_end = EXCLUDED.last_end, updated_at = now()
                    """, [node, c.streamKey, c.rendition, c.generation, String(c.lastSequence), String(c.discontinuitySequence), String(c.initVersion),
                          c.clockOffset.map { String($0) }, c.lastEnd.map { String($0) }])
            }
        }
    }

    /// A package that left memory (its show ended and the retention passed): nothing to continue.
    public static func delete(_ db: PostgresConnection, node: String, streamKey: String) throws {
        _ = try db.execute("DELETE FROM package_cursors WHERE node = $1 AND stream_key = $2", [node, streamKey])
    }
}
