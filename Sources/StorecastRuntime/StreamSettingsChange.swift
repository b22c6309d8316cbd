import StorecastWire

/// What a `PATCH` of a stream changes (issue 16): each field absent stays as it is. A nullable
/// setting can also be cleared (`null`): the ladder profile then falls back to the tenant's
/// default, the reconnect window to the ingest's.
public struct StreamSettingsChange: Sendable, Hashable, Decodable {
    /// A nullable field of a JSON merge patch: absent, `null`, or a value.
    public enum Field<Value: Sendable & Hashable>: Sendable, Hashable {
        case unchanged
        case cleared
        case set(Value)
    }

    public static let latencyModes = ["low", "standard"]
    public static let reconnectWindowSeconds = 0...300
    public static let maximumTitle = 200

    public var title: String?
    public var visibility: String?
    public var recording: Bool?
    public var latencyMode: String?
    public var ladderProfile: Field<String> = .unchanged
    public var reconnectWindowSeconds: Field<Int> = .unchanged
    /// Pinned to the top of the tenant's stories feed while live.
    public var pinned: Bool?

    public init(title: String? = nil, visibility: String? = nil, recording: Bool? = nil, latencyMode: String? = nil,
                ladderProfile: Field<String> = .unchanged, reconnectWindowSeconds: Field<Int> = .unchanged, pinned: Bool? = nil) {
        self.pinned = pinned
        self.title = title
        self.visibility = visibility
        self.recording = recording
        self.latencyMode = latencyMode
        self.ladderProfile = ladderProfile
        self.reconnectWindowSeconds = reconnectWindowSeconds
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case title, visibility, recording, latencyMode, ladderProfile, reconnectWindowSeconds, pinned
    }

    public init(from decoder: any Decoder) throws {
        try StrictJSONFields.check(decoder, CodingKeys.self, nullable: ["ladderProfile", "reconnectWindowSeconds"])
        let c = try decoder.container(keyedBy: CodingKeys.self)
        title = try c.decodeIfPresent(String.self, forKey: .title)
        visibility = try c.decodeIfPresent(String.self, forKey: .visibility)
        recording = try c.decodeIfPresent(Bool.self, forKey: .recording)
        latencyMode = try c.decodeIfPresent(String.self, forKey: .latencyMode)
        ladderProfile = try Self.field(c, .ladderProfile)
        reconnectWindowSeconds = try Self.field(c, .reconnectWindowSeconds)
        pinned = try c.decodeIfPresent(Bool.self, forKey: .pinned)
    }

    private static func field<Value: Decodable & Sendable & Hashable>(_ c: KeyedDecodingContainer<CodingKeys>, _ key: CodingKeys) throws -> Field<Value> {
        guard c.contains(key) else { return .unchanged }
        if try c.decodeNil(forKey: key) { return .cleared }
        return .set(try c.decode(Value.self, forKey: key))
    }

    /// The first field out of range, with what it must be; nil when every field is valid.
    public func problem() -> (field: String, message: String)? {
        if let title, title.count > Self.maximumTitle { return ("title", "title must be at most \(Self.maximumTitle) characters") }
        if let visibility, !["public", "private"].contains(visibility) { return ("visibility", "visibility must be public or private, not \(visibility)") }
        if let latencyMode, !Self.latencyModes.contains(latencyMode) {
            return ("latencyMode", "latencyMode must be low (LL-HLS parts) or standard (whole segments), not \(latencyMode)")
        }
        if case .set(let seconds) = reconnectWindowSeconds, !Self.reconnectWindowSeconds.contains(seconds) {
            return ("reconnectWindowSeconds", "reconnectWindowSeconds must be from 0 to 300, or null for the ingest's default")
        }
        if case .set(let name) = ladderProfile, !Slug.isValid(name) { return ("ladderProfile", "ladderProfile must name a ladder profile (\(Slug.rule)), or be null for the tenant's default") }
        return nil
    }
}
