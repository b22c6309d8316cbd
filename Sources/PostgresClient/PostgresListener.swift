import Foundation
import Synchronization

/// A dedicated thread with a connection of its own that LISTENs on one channel and wakes its
/// reader when a NOTIFY on it commits, so a reader of new rows need not poll for them. The
/// thread blocks in poll(2) on libpq's socket, never on Swift's cooperative pool.
///
/// `wakeups` yields once per notification (coalesced: a reader busy when several come sees one),
/// and also every `fallback` while connected, every `disconnectedFallback` while the connection
/// is down or cannot be made, so a reader polls as before whenever notifications could be missed.
/// Only the newest wake-up is kept.
public final class PostgresListener: Sendable {
    public enum Wakeup: Sendable, Equatable {
        /// A NOTIFY on the channel committed.
        case notified
        /// No notification within the fallback interval (or the connection is down).
        case timedOut
    }

    private final class StopFlag: Sendable {
        let stopped = Atomic<Bool>(false)
    }

    public let wakeups: AsyncStream<Wakeup>
    private let flag = StopFlag()

    public init(conninfo: String, channel: String, name: String, fallback: Double = 1, disconnectedFallback: Double = 0.25,
                onConnectionChange: (@Sendable (_ connected: Bool, _ error: (any Error)?) -> Void)? = nil) {
        let (stream, continuation) = AsyncStream.makeStream(of: Wakeup.self, bufferingPolicy: .bufferingNewest(1))
        wakeups = stream
        let flag = self.flag
        let thread = Thread {
            var connection: PostgresConnection?
            // The wait is sliced so that `stop()` is seen within half a second.
            let slice = min(fallback, 0.5)
            var quiet = 0.0
            while !flag.stopped.load(ordering: .acquiring) {
                if connection == nil {
                    do {
                        let made = try PostgresConnection(conninfo: conninfo)
                        try made.listen(channel)
                        connection = made
                        onConnectionChange?(true, nil)
                        // Rows may have come while no one listened: the reader looks now.
                        continuation.yield(.timedOut)
                    } catch {
                        onConnectionChange?(false, error)
                        continuation.yield(.timedOut)
                        Thread.sleep(forTimeInterval: disconnectedFallback)
                        continue
                    }
                }
                do {
                    let received = try connection!.notifications(waitingUpTo: slice)
                    if !received.isEmpty {
                        quiet = 0
                        continuation.yield(.notified)
                    } else {
                        quiet += slice
                        if quiet >= fallback - 0.001 { quiet = 0; continuation.yield(.timedOut) }
                    }
                } catch {
                    connection = nil
                    onConnectionChange?(false, error)
                }
            }
            continuation.finish()
        }
        thread.name = name
        thread.start()
    }

    /// Ends `wakeups` within half a second and closes the connection.
    public func stop() { flag.stopped.store(true, ordering: .releasing) }

    deinit { stop() }
}
