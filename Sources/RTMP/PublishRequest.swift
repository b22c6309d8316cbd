/// What a client asked for with `connect` + `publish`, parsed from the tcUrl, app and stream name.
public struct PublishRequest: Equatable, Sendable {
    /// The application from `connect` (for example "live").
    public var app: String
    /// The stream key: the publish name before any `?query`.
    public var streamKey: String
    /// Query parameters that followed the key (`rtmp://host/live/KEY?token=…`).
    public var query: [String: String]
    /// live, record or append.
    public var publishType: String
    public var tcUrl: String?
    public var flashVer: String?

    public init(app: String, streamKey: String, query: [String: String], publishType: String, tcUrl: String?, flashVer: String?) {
        self.app = app
        self.streamKey = streamKey
        self.query = query
        self.publishType = publishType
        self.tcUrl = tcUrl
        self.flashVer = flashVer
    }

    /// Splits `KEY?a=b&c=d` into the key and its parameters.
    public static func splitName(_ name: String) -> (key: String, query: [String: String]) {
        guard let q = name.firstIndex(of: "?") else { return (name, [:]) }
        var query: [String: String] = [:]
        for pair in name[name.index(after: q)...].split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            query[String(parts[0])] = parts.count > 1 ? String(parts[1]) : ""
        }
        return (String(name[..<q]), query)
    }
}
