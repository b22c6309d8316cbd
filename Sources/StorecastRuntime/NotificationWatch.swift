import Logging
import PostgresClient

/// Whether a `PostgresListener`'s notifications arrive, judged from what its reader finds. A
/// reader woken by its fallback poll that finds new rows found rows no notification announced.
/// Once in a while that is a race (a row committed just before the poll), and the row's own
/// notification follows. Several such reads in a row, with no notification between them, mean
/// the notifications do not reach the listener. The usual cause is a database URL that goes
/// through a pooler in transaction mode, where LISTEN is accepted and hears nothing. Every row
/// then waits for a poll.
///
/// A decider: the reader reports each read, and the watch says when to warn (once) and when
/// notifications are heard again. Reads while the connection is down are not judged (its loss
/// is logged on its own, by ``ListenerConnectionLog``).
public struct NotificationWatch: Sendable {
    public enum Action: Sendable, Equatable {
        /// `reads` reads in a row found rows no notification announced.
        case unheard(reads: Int)
        /// A notification arrived after that warning.
        case heardAgain
    }

    /// Reads in a row that find unannounced rows before the warning.
    public let threshold: Int
    private var unannounced = 0
    private var warned = false

    public init(threshold: Int = 3) {
        self.threshold = max(1, threshold)
    }

    /// After a read woken by `wakeup` (nil for the reader's first read, before any wake-up)
    /// that found new rows (`foundNew`) or not.
    public mutating func read(after wakeup: PostgresListener.Wakeup?, foundNew: Bool) -> Action? {
        switch wakeup {
        case .notified:
            unannounced = 0
            guard warned else { return nil }
            warned = false
            return .heardAgain
        case .timedOut:
            guard foundNew else { return nil }
            unannounced += 1
            guard unannounced >= threshold, !warned else { return nil }
            warned = true
            return .unheard(reads: unannounced)
        case .disconnected, nil:
            return nil
        }
    }
}

extension NotificationWatch.Action {
    /// Says what the watch decided, for an operator: `rows` names the rows in the reader's words
    /// ("product cards"), `reader` where they are late ("this packager"), `poll` how often the
    /// reader polls ("a second").
    public func log(to logger: Logger, rows: String, reader: String, poll: String, channel: String) {
        switch self {
        case .unheard(let reads):
            logger.warning("""
                \(rows) reach \(reader) only by its poll, up to \(poll) late: \(reads) reads in a row found \(rows) no \
                notification announced. Check that the database URL reaches PostgreSQL directly: through a pooler in \
                transaction mode, LISTEN hears nothing
                """, metadata: ["channel": "\(channel)"])
        case .heardAgain:
            logger.info("\(rows) are announced again", metadata: ["channel": "\(channel)"])
        }
    }
}
