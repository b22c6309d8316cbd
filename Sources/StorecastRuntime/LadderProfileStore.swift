import Foundation
import PostgresClient
import StorecastWire

/// Ladder profiles in PostgreSQL (`ladder_profiles`): created per tenant, made the tenant's
/// default or given to one stream. Ingest resolves a stream's profile when it is published
/// (``StreamCatalog/stream(forKey:)``) and sends it to the worker with the lease.
public struct LadderProfileStore: Sendable {
    public static let presets = ["ultrafast", "superfast", "veryfast", "faster", "fast", "medium"]
    public static let shortSides = 144...2160
    public static let bitrates = 100_000...20_000_000
    public static let maximumRungs = 8

    /// A profile the store refuses, or a tenant, stream or profile that does not exist.
    public enum Problem: Error, Equatable, CustomStringConvertible {
        case invalid(String)
        case notFound(String)
        public var description: String {
            switch self {
            case .invalid(let m), .notFound(let m): m
            }
        }
    }

    /// The JSON form of a rung in `ladder_profiles.rungs` and in the control API.
    public struct RungJSON: Codable, Sendable, Equatable {
        public var name: String
        public var shortSide: Int
        public var bitrate: Int
        public init(name: String, shortSide: Int, bitrate: Int) {
            self.name = name
            self.shortSide = shortSide
            self.bitrate = bitrate
        }

        public init(_ rung: TranscodeProfile.Rung) {
            self.init(name: rung.name, shortSide: Int(rung.shortSide), bitrate: Int(rung.bitrate))
        }

        /// The rung as the wire carries it (values outside the wire's range are clamped).
        public var wire: TranscodeProfile.Rung {
            TranscodeProfile.Rung(name: name, shortSide: UInt16(clamping: shortSide), bitrate: UInt32(clamping: bitrate))
        }
    }

    public let database: PostgresExecutor

    public init(database: PostgresExecutor) {
        self.database = database
    }

    /// Checks a profile and returns it with its rungs largest first; the message says what to fix.
    public static func validated(name: String, rungs: [RungJSON], preset: String, gopSeconds: Int, lowLatency: Bool) throws -> TranscodeProfile {
        guard Slug.isValid(name) else {
            throw Problem.invalid("profile name must be \(Slug.rule)")
        }
        guard (1...maximumRungs).contains(rungs.count) else { throw Problem.invalid("a profile has 1 to \(maximumRungs) rungs, not \(rungs.count)") }
        guard Set(rungs.map(\.name)).count == rungs.count else { throw Problem.invalid("rung names must be unique") }
        for rung in rungs {
            guard rung.name.range(of: "^[a-z0-9][a-z0-9-]{0,15}$", options: .regularExpression) != nil else {
                throw Problem.invalid("rung name \(rung.name) must be 1-16 characters of a-z, 0-9 and '-'")
            }
            guard shortSides.contains(rung.shortSide), rung.shortSide % 2 == 0 else {
                throw Problem.invalid("rung \(rung.name): shortSide must be an even number from \(shortSides.lowerBound) to \(shortSides.upperBound)")
            }
            guard bitrates.contains(rung.bitrate) else {
                throw Problem.invalid("rung \(rung.name): bitrate must be from \(bitrates.lowerBound) to \(bitrates.upperBound) bits per second")
            }
        }
        guard presets.contains(preset) else { throw Problem.invalid("preset must be one of \(presets.joined(separator: ", "))") }
        guard gopSeconds == 1 || gopSeconds == 2 else { throw Problem.invalid("gopSeconds must be 1 or 2") }
        let sorted = rungs.sorted { $0.shortSide > $1.shortSide }
        return TranscodeProfile(name: name, rungs: sorted.map(\.wire),
                                preset: preset, gopSeconds: UInt8(gopSeconds), lowLatency: lowLatency)
    }

    /// Creates or replaces the tenant's profile of that name; `makeDefault` gives it to every
    /// stream of the tenant without its own. A rung above the tenant's largest rendition
    /// (`max_rendition_short_side`) is refused.
    public func save(tenantSlug: String, profile: TranscodeProfile, makeDefault: Bool) async throws {
        let rungs = String(decoding: try JSONEncoder().encode(profile.rungs.map(RungJSON.init)), as: UTF8.self)
        try await database.run { conn in
            try conn.transaction {
                let tenant = try conn.execute("SELECT max_rendition_short_side FROM tenants WHERE slug = $1 FOR SHARE", [tenantSlug])
                guard let ceiling = tenant.int(0, "max_rendition_short_side") else { throw Problem.notFound("no tenant \(tenantSlug)") }
                if let over = profile.rungs.first(where: { Int64($0.shortSide) > ceiling }) {
                    throw Problem.invalid("rung \(over.name) (\(over.shortSide)) is above the tenant's largest rendition, \(ceiling) (maxRenditionShortSide; the operator sets it)")
                }
                let rows = try conn.execute(
                    """
                    INSERT INTO ladder_profiles (tenant_id, name, rungs, preset, gop_seconds, low_latency)
                    SELECT id, $2, $3::jsonb, $4, $5::smallint, $6::boolean FROM tenants WHERE slug = $1
                    ON CONFLICT (tenant_id, name) DO UPDATE SET rungs = EXCLUDED.rungs, preset = EXCLUDED.preset,
                        gop_seconds = EXCLUDED.gop_seconds, low_latency = EXCLUDED.low_latency
                    RETURNING id, tenant_id
                    """, [tenantSlug, profile.name, rungs, profile.preset, String(profile.gopSeconds), profile.lowLatency ? "true" : "false"])
                guard let id = rows.int(0, "id"), let tenant = rows.int(0, "tenant_id") else { throw Problem.notFound("no tenant \(tenantSlug)") }
                if makeDefault {
                    try conn.execute("UPDATE tenants SET ladder_profile_id = $2 WHERE id = $1", [String(tenant), String(id)])
                }
            }
        }
    }

    /// Gives one stream a profile of its tenant (nil: back to the tenant's default).
    public func assign(tenantSlug: String, streamSlug: String, profileName: String?) async throws {
        let updated = try await database.execute(
            """
            UPDATE streams s SET ladder_profile_id = p.id, updated_at = now()
            FROM tenants t LEFT JOIN ladder_profiles p ON p.tenant_id = t.id AND p.name = $3
            WHERE s.tenant_id = t.id AND t.slug = $1 AND s.slug = $2 AND ($3::text IS NULL OR p.id IS NOT NULL)
            RETURNING s.id
            """, [tenantSlug, streamSlug, profileName])
        guard !updated.isEmpty else {
            throw Problem.notFound("no stream \(tenantSlug)/\(streamSlug)" + (profileName.map { " or no profile \($0) for that tenant" } ?? ""))
        }
    }

    /// A profile from the columns `profile_name`, `profile_rungs`, `profile_preset`,
    /// `profile_gop`, `profile_low_latency` of row `i` (nil when the row has none).
    static func profile(_ rows: PostgresRows, _ i: Int) -> TranscodeProfile? {
        guard let name = rows.value(i, "profile_name"), let json = rows.value(i, "profile_rungs"),
              let rungs = try? JSONDecoder().decode([RungJSON].self, from: Data(json.utf8)) else { return nil }
        return TranscodeProfile(
            name: name, rungs: rungs.map(\.wire),
            preset: rows.value(i, "profile_preset") ?? "veryfast", gopSeconds: UInt8(clamping: rows.int(i, "profile_gop") ?? 2),
            lowLatency: rows.value(i, "profile_low_latency") != "f")
    }
}
