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
    /// Streams whose access is cached at once; past it, expired entries go, then all (a client
    /// asking for endless made-up names must not grow the packager).
    public static let maximumCached = 10_000

    private let store: PlaybackAccessStore?
    private let cache = Mutex<[String: (access: PlaybackAccess?, fetched: Double)]>([:])
    private let now: @Sendable () -> Double

    public init(store: PlaybackAccessStore?, now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }) {
        self.store = store
        self.now = now
    }

    /// Throws 401 or 403 with the reason when the request may not play the stream, and 404 when
    /// the database knows no such stream (deleted: what this packager still holds of it is not
    /// served). (Handlers carry the accepted token into their URIs with `PackagerHTTP.tokenQuery`.)
    public func authorize(tenant: String, stream: String, token: String?) async throws {
        guard store != nil else { return }
        guard var access = try await self.access(tenant: tenant, stream: stream) else {
            throw HTTPError(.notFound, message: "No stream \(tenant)/\(stream).")
        }
        guard access.isPrivate else { return }
        var failure = access.denial(of: token, tenant: tenant, stream: stream, now: Int64(now()))
        // A token signed with a secret rotated in the last 10 s: read the access again (at most
        // once a second per stream, so bad tokens cannot turn into a query each).
        if failure != nil, token != nil, let fresh = try? await self.access(tenant: tenant, stream: stream, maximumAge: 1) {
            access = fresh
            failure = access.isPrivate ? access.denial(of: token, tenant: tenant, stream: stream, now: Int64(now())) : nil
        }
        if let error = failure {
            Counter(label: "storecast_packager_playback_denied_total", dimensions: [("reason", error.reason)]).increment()
            throw HTTPError(error.httpStatus == 401 ? .unauthorized : .forbidden, message: error.description)
        }
    }

    /// Whether a request without a token may play the stream, from what is cached alone (no
    /// wait, no query): without a database every stream is public; otherwise only a public
    /// stream read within the cache's age. False is "not known here", not a refusal: the
    /// caller then asks ``authorize(tenant:stream:token:)``.
    /// `key`: the stream's ``PackageStore/key(tenant:stream:)``.
    public func admitsWithoutToken(key: String) -> Bool {
        guard store != nil else { return true }
        let t = now()
        return cache.withLock { cache in
            guard let cached = cache[key], t - cached.fetched < Self.cacheSeconds, let access = cached.access else { return false }
            return !access.isPrivate
        }
    }

    /// Whether the stream may appear in the packager's index: public for sure (private ones, and
    /// ones whose access cannot be read now, are left out).
    public func isListed(tenant: String, stream: String) async -> Bool {
        guard let access = try? await access(tenant: tenant, stream: stream) else { return store == nil }
        return !access.isPrivate
    }

    /// Whether the stream's playlists offer LL-HLS parts: its latency mode is `low` (the
    /// default, also when nothing can be read now).
    public func isLowLatency(tenant: String, stream: String) async -> Bool {
        guard let access = try? await access(tenant: tenant, stream: stream) else { return true }
        return !access.standardLatency
    }

    private func access(tenant: String, stream: String, maximumAge: Double = PlaybackGate.cacheSeconds) async throws -> PlaybackAccess? {
        guard let store else { return nil }
        let key = PackageStore.key(tenant: tenant, stream: stream)
        let t = now()
        let cached = cache.withLock { $0[key] }
        if let cached, t - cached.fetched < maximumAge { return cached.access }
        do {
            let fresh = try await store.access(tenant: tenant, stream: stream)
            cache.withLock { cache in
                if cache.count >= Self.maximumCached {
                    cache = cache.filter { t - $0.value.fetched < Self.cacheSeconds }
                    if cache.count >= Self.maximumCached { cache = [:] }
                }
                cache[key] = (fresh, t)
            }
            return fresh
        } catch {
            if let cached { return cached.access }  // stale beats failing while the database is away
            throw HTTPError(.serviceUnavailable, message: "Playback access cannot be checked right now (the metadata database is unreachable); retry shortly.")
        }
    }
}
