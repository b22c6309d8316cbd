import Foundation
import PostgresClient

/// Who may play a stream: its visibility and its tenant's playback secret, in PostgreSQL.
public struct PlaybackAccess: Sendable, Equatable {
    public var isPrivate: Bool
    public var secret: String

    public init(isPrivate: Bool, secret: String) {
        self.isPrivate = isPrivate
        self.secret = secret
    }
}

public struct PlaybackAccessStore: Sendable {
    public static let visibilities = ["public", "private"]
    /// Longest token lifetime the API issues: a day.
    public static let maximumTokenSeconds = 86_400

    public let database: PostgresExecutor

    public init(database: PostgresExecutor) {
        self.database = database
    }

    /// nil when the tenant or stream does not exist.
    public func access(tenant: String, stream: String) async throws -> PlaybackAccess? {
        let rows = try await database.execute(
            "SELECT s.visibility, t.playback_secret FROM streams s JOIN tenants t ON t.id = s.tenant_id WHERE t.slug = $1 AND s.slug = $2",
            [tenant, stream])
        guard !rows.isEmpty, let secret = rows.value(0, "playback_secret") else { return nil }
        return PlaybackAccess(isPrivate: rows.value(0, "visibility") == "private", secret: secret)
    }

    /// Returns false when there is no such stream.
    public func setVisibility(tenant: String, stream: String, _ visibility: String) async throws -> Bool {
        let rows = try await database.execute(
            "UPDATE streams s SET visibility = $3, updated_at = now() FROM tenants t WHERE t.id = s.tenant_id AND t.slug = $1 AND s.slug = $2",
            [tenant, stream, visibility])
        return rows.affected > 0
    }

    /// A token valid for `seconds` from `now`; nil when there is no such stream.
    public func issueToken(tenant: String, stream: String, seconds: Int, now: Date = Date()) async throws -> (token: String, expiry: Int64)? {
        guard let access = try await access(tenant: tenant, stream: stream) else { return nil }
        let expiry = Int64(now.timeIntervalSince1970) + Int64(seconds)
        return (PlaybackToken.issue(tenant: tenant, stream: stream, expiry: expiry, secret: access.secret), expiry)
    }
}
