import Synchronization

/// The clients a node's bound sockets accept: CURVE public key → name (a role, or a node given
/// its own key). The ZAP handler asks it at every handshake, and every bound socket asks it for
/// the sender of every message it receives (its ZAP User-Id), so a name taken off the list is
/// refused at once, on connections already open too. With `refresh` the list follows its
/// source: looked at no more than once per `interval`; `refresh` returns the new entries when
/// the source changed, nil when it did not or cannot be read (the current list stays).
public final class CurveAllowList: Sendable {
    private struct State {
        var entries: [[UInt8]: String]
        var names: Set<String>
        var checked: ContinuousClock.Instant
    }

    private let state: Mutex<State>
    private let refresh: (@Sendable () -> [[UInt8]: String]?)?
    private let interval: Duration

    public init(_ entries: [[UInt8]: String], interval: Duration = .seconds(1), refresh: (@Sendable () -> [[UInt8]: String]?)? = nil) {
        state = Mutex(State(entries: entries, names: Set(entries.values), checked: .now))
        self.refresh = refresh
        self.interval = interval
    }

    /// The name of an allowed key, or nil.
    public func name(of key: [UInt8]) -> String? {
        reloadIfDue()
        return state.withLock { $0.entries[key] }
    }

    /// Whether a peer authenticated as `name` (its ZAP User-Id) is still allowed.
    public func admits(_ name: String) -> Bool {
        reloadIfDue()
        return state.withLock { $0.names.contains(name) }
    }

    private func reloadIfDue() {
        guard let refresh else { return }
        let now = ContinuousClock.now
        let due = state.withLock { s -> Bool in
            guard now - s.checked >= interval else { return false }
            s.checked = now
            return true
        }
        guard due, let entries = refresh() else { return }
        state.withLock { s in
            s.entries = entries
            s.names = Set(entries.values)
        }
    }
}
