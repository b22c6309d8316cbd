import Foundation
import Synchronization

/// A dedicated thread with a connection of its own that LISTENs on one channel and wakes its
/// reader when a NOTIFY on it commits, so a reader of new rows need not poll for them. The
/// thread blocks in poll(2) on libpq's socket, never on Swift's cooperative pool.
///
/// `wakeups` yields once per notification (coalesced: a reader busy when several come sees one),
/// and also every `fallback` while connected, every `disconnectedFallback` while the connection
/// is down or cannot be made, so a reader polls as before whenever notifications could be missed.
/// Only the newest wake-up is kept, and wake-ups are at least `minimumGap` apart (a burst of
/// notifications wakes the reader once, at the gap's end). Each wake-up says what woke it, so a
/// reader can tell notifications that never arrive (`NotificationWatch` in StorecastRuntime).
/// The connection must be a session of its own (not through a pooler in transaction mode, where
/// LISTEN hears nothing); TCP keepalives find a peer that is gone.
public final class PostgresListener: Sendable {
    public enum Wakeup: Sendable, Equatable {
        /// A NOTIFY on the channel committed.
        case notified
        /// No notification within the fallback interval, or the listener has just started
        /// listening (rows may have come while no one listened).
        case timedOut
        /// The connection is down or cannot be made: the reader polls every `disconnectedFallback`.
        case disconnected
    }

    /// The listener's connection settings unless the connection string sets them: a connect
    /// attempt gives up after 5 s, and a peer that stops answering is found within about 30 s.
    static let connectionDefaults: [(keyword: String, value: String)] = [
        ("connect_timeout", "5"), ("keepalives", "1"), ("keepalives_idle", "10"), ("keepalives_interval", "5"),
        ("keepalives_count", "3"), ("tcp_user_timeout", "30000"),
    ]

    private final class State: Sendable {
        let stopped = Atomic<Bool>(false)
        let continuation: AsyncStream<Wakeup>.Continuation
        init(_ continuation: AsyncStream<Wakeup>.Continuation) { self.continuation = continuation }
    }

    public let wakeups: AsyncStream<Wakeup>
    private let state: State

    /// `onConnectionChange` is called when the listener starts listening (`true`) and when it
    /// loses or cannot make its connection (`false`, with the error), once per change.
    public init(conninfo: String, channel: String, name: String, fallback: Double = 1, disconnectedFallback: Double = 0.25, minimumGap: Double = 0,
                onConnectionChange: (@Sendable (_ connected: Bool, _ error: (any Error)?) -> Void)? = nil) {
        let (stream, continuation) = AsyncStream.makeStream(of: Wakeup.self, bufferingPolicy: .bufferingNewest(1))
        wakeups = stream
        let state = State(continuation)
        self.state = state
        let fallback = max(0.05, fallback), disconnectedFallback = max(0.05, disconnectedFallback)
        let thread = Thread {
            var connection: PostgresConnection?
            var reported: Bool?
            func report(_ connected: Bool, _ error: (any Error)?) {
                guard reported != connected else { return }
                reported = connected
                onConnectionChange?(connected, error)
            }
            // The wait is sliced so that `stop()` is seen within half a second.
            let slice = min(fallback, 0.5)
            var quietSince = ContinuousClock.now
            var lastWake = ContinuousClock.now - .seconds(minimumGap)
            func wake(_ wakeup: Wakeup) {
                let early = lastWake + .seconds(minimumGap) - .now
                if early > .zero { Thread.sleep(forTimeInterval: early / .seconds(1)) }
                lastWake = .now
                continuation.yield(wakeup)
            }
            while !state.stopped.load(ordering: .acquiring) {
                if connection == nil {
                    do {
                        let made = try PostgresConnection(conninfo: conninfo, defaults: Self.connectionDefaults, applicationName: name)
                        try made.listen(channel)
                        connection = made
                        report(true, nil)
                        // Rows may have come while no one listened: the reader looks now.
                        wake(.timedOut)
                        quietSince = .now
                    } catch {
                        report(false, error)
                        wake(.disconnected)
                        Thread.sleep(forTimeInterval: disconnectedFallback)
                        continue
                    }
                }
                do {
                    let received = try connection!.notifications(waitingUpTo: slice)
                    if !received.isEmpty {
                        quietSince = .now
                        wake(.notified)
                    } else if ContinuousClock.now - quietSince >= .seconds(fallback) {
                        quietSince = .now
                        wake(.timedOut)
                    }
                } catch {
                    connection = nil
                    report(false, error)
                }
            }
            continuation.finish()
        }
        thread.name = name
        thread.start()
    }

    /// Ends `wakeups` now (a reader waiting on it gets nil); the thread closes the connection
    /// within half a second, or when a connection attempt in progress gives up (at most 5 s).
    public func stop() {
        state.stopped.store(true, ordering: .releasing)
        state.continuation.finish()
    }

    deinit { stop() }
}
