import Synchronization

/// What the HTTP side reads: the current package of every stream, keyed by "tenant/stream".
/// Written by the packaging thread, read by request handlers; recent media lives in memory.
///
/// Every update bumps the stream's version and wakes the requests blocked on it (blocking
/// playlist reload, preload-hinted parts); they look again and wait again if it is not there yet.
public final class PackageStore: Sendable {
    private typealias Waiter = CheckedContinuation<Void, Never>

    private struct State {
        var packages: [String: StreamPackage] = [:]
        var versions: [String: UInt64] = [:]
        /// Blocked requests per stream: `waiters` wake on updates that change playlists or whole
        /// parts, `chunkWaiters` (streaming a part) on every update, chunks included; kept apart
        /// so a chunk's update never looks at the crowd waiting on playlists.
        var waiters: [String: [UInt64: Waiter]] = [:]
        var chunkWaiters: [String: [UInt64: Waiter]] = [:]
        var nextWaiter: UInt64 = 0
        /// Streams a restarted packager expects back (``expectResumptions(_:)``).
        var resuming: Set<String> = []
    }

    private let state = Mutex(State())

    public init() {}

    public static func key(tenant: String, stream: String) -> String { "\(tenant)/\(stream)" }

    /// `chunksOnly`: the update only added chunks of a part in progress; it wakes only the
    /// requests streaming a part (a playlist or a whole part cannot have changed), so the crowd
    /// blocked on the live edge wakes once per part, not once per chunk of every rendition.
    public func update(_ key: String, chunksOnly: Bool = false, _ body: (inout StreamPackage?) -> Void) {
        let woken = state.withLock { s -> [Waiter] in
            // Taken out of the dictionary while `body` runs, so it holds the only reference and
            // appends (chunks, segments, the DVR list) happen in place instead of copying.
            var value = s.packages.removeValue(forKey: key)
            body(&value)
            s.packages[key] = value  // nil removes it
            s.versions[key, default: 0] &+= 1
            let streaming = Array((s.chunkWaiters.removeValue(forKey: key) ?? [:]).values)
            guard !chunksOnly else { return streaming }
            return streaming + (s.waiters.removeValue(forKey: key) ?? [:]).values
        }
        for w in woken { w.resume() }
    }

    /// Media of the hot paths (``MediaFastPath/Origin``): the bytes `resource` names in the
    /// stream's rendition, when the package in memory is of `generation`, with the package's
    /// stream id (its ETag). Read in place under the lock: copying the package and the rendition
    /// out, as ``package(_:)`` does, takes and drops a reference on each of their arrays and
    /// strings, which the event loops' threads share.
    public func media(_ key: String, generation: String, rendition: String, _ resource: PlaylistURIs.Resource) -> (bytes: ArraySlice<UInt8>, streamID: Int64)? {
        state.withLock { s in
            guard let p = s.packages.index(forKey: key), s.packages.values[p].generation == generation,
                  let r = s.packages.values[p].renditions.index(forKey: rendition),
                  let bytes = s.packages.values[p].renditions.values[r].mediaBytes(resource) else { return nil }
            return (bytes, s.packages.values[p].streamID)
        }
    }

    public func package(_ key: String) -> StreamPackage? {
        state.withLock { $0.packages[key] }
    }

    /// The package and its version, read together so a waiter cannot miss an update.
    public func snapshot(_ key: String) -> (package: StreamPackage?, version: UInt64) {
        state.withLock { ($0.packages[key], $0.versions[key] ?? 0) }
    }

    /// A restarted packager expects these streams back within seconds (the transcoders repeat
    /// their announces at every keyframe): until each is, or ``resumptionsOver()``, a request
    /// for it is answered 503 "retry", not 404. hls.js gives up on a 404 playlist at once and
    /// switches to another rendition whose playlist it last read long ago; aligning that stale
    /// playlist by guesswork, it then seeks the video seconds back (docs/reliability.md).
    public func expectResumptions(_ keys: Set<String>) {
        state.withLock { $0.resuming = keys }
    }

    /// The stream is back (or was given up): requests for it are answered as usual again.
    public func resumptionDone(_ key: String) {
        _ = state.withLock { $0.resuming.remove(key) }
    }

    /// No more streams are expected back: unknown streams are 404 again.
    public func resumptionsOver() {
        state.withLock { $0.resuming = [] }
    }

    /// Whether a request for the stream under `key` should be told to retry.
    public func isResuming(_ key: String) -> Bool {
        state.withLock { $0.resuming.contains(key) }
    }

    public func keys() -> [String] {
        state.withLock { Array($0.packages.keys).sorted() }
    }

    /// Requests blocked right now, across streams.
    public var blockedRequests: Int {
        state.withLock { s in (s.waiters.values.reduce(0) { $0 + $1.count }) + (s.chunkWaiters.values.reduce(0) { $0 + $1.count }) }
    }

    /// Returns once `key` is past `version`, or after `timeout`, or when the task is cancelled.
    /// Without `chunks`, updates that only add chunks do not wake it.
    public func waitForChange(_ key: String, after version: UInt64, timeout: Duration, chunks: Bool = false) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.waitUntilChanged(key, after: version, chunks: chunks) }
            group.addTask { try? await Task.sleep(for: timeout) }
            await group.next()
            group.cancelAll()
        }
    }

    private static func remove(_ id: UInt64, of key: String, from waiters: inout [String: [UInt64: Waiter]]) -> Waiter? {
        let w = waiters[key]?.removeValue(forKey: id)
        if waiters[key]?.isEmpty == true { waiters[key] = nil }
        return w
    }

    private func waitUntilChanged(_ key: String, after version: UInt64, chunks: Bool) async {
        let id = state.withLock { s -> UInt64 in
            s.nextWaiter &+= 1
            return s.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { s -> Bool in
                    if (s.versions[key] ?? 0) != version || Task.isCancelled { return true }
                    if chunks { s.chunkWaiters[key, default: [:]][id] = c } else { s.waiters[key, default: [:]][id] = c }
                    return false
                }
                if resumeNow { c.resume() }
            }
        } onCancel: {
            let w = state.withLock { s in chunks ? Self.remove(id, of: key, from: &s.chunkWaiters) : Self.remove(id, of: key, from: &s.waiters) }
            w?.resume()
        }
    }
}
