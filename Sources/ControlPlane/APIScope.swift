/// What a tenant's API key may do (issue 16). A key holds one or more; the operator's token
/// may do everything.
public enum APIScope: String, CaseIterable, Sendable, Codable {
    /// Read streams, their live status, sessions, playback URLs and thumbnails.
    case streamsRead = "streams:read"
    /// Create and change streams, their ladder profiles and visibility.
    case streamsWrite = "streams:write"
    /// Mint playback tokens for private streams and rotate the playback secret.
    case playbackSign = "playback:sign"
    /// Turn recording on or off and read recordings and storage.
    case recordings
    /// Manage webhook endpoints (the webhooks part of issue 16).
    case webhooks
    /// Post product highlights (issue 18).
    case highlights
}

/// Who is calling, once its bearer token is checked.
public enum Principal: Sendable, Equatable {
    /// The operator's admin token.
    case `operator`
    /// A tenant's API key: its tenant, its id and its scopes.
    case tenant(String, keyID: String, scopes: Set<APIScope>)

    /// Who made something, as stored: `operator` or the key's id.
    var name: String {
        switch self {
        case .operator: "operator"
        case .tenant(_, let keyID, _): keyID
        }
    }
}

/// Who may call a route.
public enum RouteAccess: Sendable, Equatable {
    /// The operator only.
    case `operator`
    /// The operator, or a key of the route's tenant (`:tenant`) holding `scope` (nil: any key).
    case tenant(APIScope?)
    /// Anyone for a public stream; a playback token for a private one (no bearer token).
    case publicStream

    /// As the OpenAPI document's `x-storecast-access` writes it: `operator`, `tenant`, `tenant:<scope>`.
    public var name: String {
        switch self {
        case .operator: "operator"
        case .tenant(nil): "tenant"
        case .tenant(let scope?): "tenant:\(scope.rawValue)"
        case .publicStream: "public"
        }
    }

    /// From the document's `x-storecast-access` (nil for a value it does not define).
    public init?(name: String) {
        switch name {
        case "operator": self = .operator
        case "tenant": self = .tenant(nil)
        case "public": self = .publicStream
        case _ where name.hasPrefix("tenant:"):
            guard let scope = APIScope(rawValue: String(name.dropFirst(7))) else { return nil }
            self = .tenant(scope)
        default: return nil
        }
    }
}
