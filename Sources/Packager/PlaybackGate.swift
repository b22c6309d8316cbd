import Foundation
import Hummingbird
import Metrics
import StorecastRuntime
import Synchronization

/// Checks playback tokens for private streams on every playlist, segment and part request.
/// Each stream's access (visibility, tenant secret) is read from PostgreSQL on the database
/// thread and cached for `cacheSeconds`, so a visibility change or a rotated secret takes effect
/// within that time and the live path does not wait on the database. Without a database
/// (development) every stream is public. If the database cannot be read and nothing is cached,
/// requests fail closed with 503.
public final class PlaybackGate: Sendable {
    public static let cacheSeconds = 10.0

    private let store: PlaybackAccessStore?
    private let cache = Mutex<[String: (access: PlaybackAccess?, fetched: Double)]>([:])
    private let now: @Sendable () -> Double

    public init(store: PlaybackAccessStore?, now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }) {
        self.store = store
        self.now = now
    }

    /// Throws 401 or 403 with the reason when the request may not play the stream. (Handlers
    /// carry the accepted token into their URIs with `PackagerHTTP.tokenQuery`.)
    public func authorize(tenant: String, stream: String, token: String?) async throws {
        guard let access = try await access(tenant: tenant, stream: stream), access.isPrivate else { return }
        do {
            try PlaybackToken.verify(token, tenant: tenant, stream: stream, secret: access.secret, now: Int64(now()))
        } catch {
            Counter(label: "storecast_packager_playback_denied_total", dimensions: [("reason", error.reason)]).increment()
            throw HTTPError(error.httpStatus == 401 ? .unauthorized : .forbidden, message: error.description)
        }
    }

    private func access(tenant: String, stream: String) async throws -> PlaybackAccess? {
        guard let store else { return nil }
        let key = PackageStore.key(tenant: tenant, stream: stream)
        let t = now()
        let cached = cache.withLock { $0[key] }
        if let cached, t - cached.fetched < Self.cacheSeconds { return cached.access }
        do {
            let fresh = try await store.access(tenant: tenant, stream: stream)
            cache.withLock { $0[key] = (fresh, t) }
            return fresh
        } catch {
            if let cached { return cached.access }  // stale beats failing while the database is away
            throw HTTPError(.serviceUnavailable, message: "Playback access cannot be checked right now (the metadata database is unreachable); retry shortly.")
        }
    }
}
