import Logging
import PostgresClient
import Synchronization

/// What an operator sees of a `PostgresListener`'s connection: a warning when it is lost or
/// cannot be made (the reader then polls, which it names), and a note when it is back.
public enum ListenerConnectionLog {
    /// A listener's `onConnectionChange`, logging for `what` is read (e.g. "product highlights")
    /// and how often it is polled while the connection is down (e.g. "every 250 ms").
    public static func callback(_ logger: Logger, what: String, pollingWhileDown: String) -> @Sendable (Bool, (any Error)?) -> Void {
        let lost = Mutex(false)
        return { connected, error in
            let wasLost = lost.withLock { previous in
                defer { previous = !connected }
                return previous
            }
            if connected {
                if wasLost { logger.info("listening for \(what) again") } else { logger.debug("listening for \(what)") }
            } else {
                logger.warning("cannot listen for \(what) on the database; reading them \(pollingWhileDown) until it answers (check that the database URL reaches PostgreSQL directly, not through a transaction pooler)",
                               metadata: ["error": "\(error.map { "\($0)" } ?? "unknown")"])
            }
        }
    }
}
