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
        var waiters: [String: [UInt64: Waiter]] = [:]
        var nextWaiter: UInt64 = 0
    }

    private let state = Mutex(State())

    public init() {}

    public static func key(tenant: String, stream: String) -> String { "\(tenant)/\(stream)" }

    public func update(_ key: String, _ body: (inout StreamPackage?) -> Void) {
        let woken = state.withLock { s -> [UInt64: Waiter] in
            var value = s.packages[key]
            body(&value)
            s.packages[key] = value  // nil removes it
            s.versions[key, default: 0] &+= 1
            return s.waiters.removeValue(forKey: key) ?? [:]
        }
        for w in woken.values { w.resume() }
    }

    public func package(_ key: String) -> StreamPackage? {
        state.withLock { $0.packages[key] }
    }

    /// The package and its version, read together so a waiter cannot miss an update.
    public func snapshot(_ key: String) -> (package: StreamPackage?, version: UInt64) {
        state.withLock { ($0.packages[key], $0.versions[key] ?? 0) }
    }

    public func keys() -> [String] {
        state.withLock { Array($0.packages.keys).sorted() }
    }

    /// Requests blocked right now, across streams.
    public var blockedRequests: Int {
        state.withLock { $0.waiters.values.reduce(0) { $0 + $1.count } }
    }

    /// Returns once `key` is past `version`, or after `timeout`, or when the task is cancelled.
    public func waitForChange(_ key: String, after version: UInt64, timeout: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.waitUntilChanged(key, after: version) }
            group.addTask { try? await Task.sleep(for: timeout) }
            await group.next()
            group.cancelAll()
        }
    }

    private func waitUntilChanged(_ key: String, after version: UInt64) async {
        let id = state.withLock { s -> UInt64 in
            s.nextWaiter &+= 1
            return s.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { s -> Bool in
                    if (s.versions[key] ?? 0) != version || Task.isCancelled { return true }
                    s.waiters[key, default: [:]][id] = c
                    return false
                }
                if resumeNow { c.resume() }
            }
        } onCancel: {
            let w = state.withLock { s -> Waiter? in
                let w = s.waiters[key]?.removeValue(forKey: id)
                if s.waiters[key]?.isEmpty == true { s.waiters[key] = nil }
                return w
            }
            w?.resume()
        }
    }
}
