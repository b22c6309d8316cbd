import Foundation
import PostgresClient

/// Who may play a stream: its visibility and its tenant's playback secret, in PostgreSQL.
public struct PlaybackAccess: Sendable, Equatable {
    public var isPrivate: Bool
    public var secret: String
    /// The secret before the last rotation, while its grace period lasts: tokens signed with it
    /// still play.
    public var previousSecret: String?
    /// The stream's latency mode is `standard`: its playlists list whole segments only (no
    /// LL-HLS parts or blocking reloads), for players that favour a steady buffer.
    public var standardLatency: Bool

    public init(isPrivate: Bool, secret: String, previousSecret: String? = nil, standardLatency: Bool = false) {
        self.isPrivate = isPrivate
        self.secret = secret
        self.previousSecret = previousSecret
        self.standardLatency = standardLatency
    }

    /// The secrets a token may be signed with, newest first.
    public var acceptedSecrets: [String] { [secret] + (previousSecret.map { [$0] } ?? []) }

    /// Nil when `token` is signed with one of the accepted secrets and valid; else why not (the
    /// newest secret's answer).
    public func denial(of token: String?, tenant: String, stream: String, now: Int64) -> PlaybackToken.Denial? {
        var first: PlaybackToken.Denial?
        for secret in acceptedSecrets {
            do {
                try PlaybackToken.verify(token, tenant: tenant, stream: stream, secret: secret, now: now)
                return nil
            } catch {
                first = first ?? error
            }
        }
        return first
    }
}

public struct PlaybackAccessStore: Sendable {
    /// Longest token lifetime the API issues: a day.
    public static let maximumTokenSeconds = 86_400

    public let database: PostgresExecutor

    public init(database: PostgresExecutor) {
        self.database = database
    }

    /// nil when the tenant or stream does not exist.
    public func access(tenant: String, stream: String) async throws -> PlaybackAccess? {
        let rows = try await database.execute(
            """
            SELECT s.visibility, s.latency_mode, t.playback_secret,
                   CASE WHEN t.previous_playback_secret_until > now() THEN t.previous_playback_secret END AS previous_secret
            FROM streams s JOIN tenants t ON t.id = s.tenant_id WHERE t.slug = $1 AND s.slug = $2
            """, [tenant, stream])
        guard !rows.isEmpty, let secret = rows.value(0, "playback_secret") else { return nil }
        return PlaybackAccess(isPrivate: rows.value(0, "visibility") == "private", secret: secret, previousSecret: rows.value(0, "previous_secret"),
                              standardLatency: rows.value(0, "latency_mode") == "standard")
    }

    /// Returns false when there is no such stream.
    public func setVisibility(tenant: String, stream: String, _ visibility: String) async throws -> Bool {
        let rows = try await database.execute(
            "UPDATE streams s SET visibility = $3, updated_at = now() FROM tenants t WHERE t.id = s.tenant_id AND t.slug = $1 AND s.slug = $2",
            [tenant, stream, visibility])
        return rows.affected > 0
    }

    /// Longest grace for the previous secret after a rotation: a week.
    public static let maximumGraceSeconds = 7 * 86_400

    /// A new playback secret for the tenant; tokens signed with the old one keep playing for
    /// `graceSeconds` (0: they stop at once, within the packagers' 10 s access cache). Returns
    /// when the old secret stops being accepted, or nil when there is no such tenant.
    public func rotateSecret(tenant: String, graceSeconds: Int) async throws -> Date? {
        let rows = try await database.execute(
            """
            UPDATE tenants SET previous_playback_secret = playback_secret,
                previous_playback_secret_until = now() + make_interval(secs => $2::int),
                playback_secret = encode(sha256((gen_random_uuid()::text || gen_random_uuid()::text)::bytea), 'hex')
            WHERE slug = $1
            RETURNING extract(epoch FROM previous_playback_secret_until)::float8 AS until
            """, [tenant, String(graceSeconds)])
        return rows.value(0, "until").flatMap(Double.init).map { Date(timeIntervalSince1970: $0) }
    }

    /// A token valid for `seconds` from `now`; nil when there is no such stream.
    public func issueToken(tenant: String, stream: String, seconds: Int, now: Date = Date()) async throws -> (token: String, expiry: Int64)? {
        guard let access = try await access(tenant: tenant, stream: stream) else { return nil }
        let expiry = Int64(now.timeIntervalSince1970) + Int64(seconds)
        return (PlaybackToken.issue(tenant: tenant, stream: stream, expiry: expiry, secret: access.secret), expiry)
    }
}
