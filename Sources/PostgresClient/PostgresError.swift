/// The one error type of the libpq wrapper.
public struct PostgresError: Error, CustomStringConvertible, Sendable {
    public enum Code: Sendable, Equatable {
        case connectionFailed
        case queryFailed
        case uniqueViolation
        case closed
    }

    public let code: Code
    public let message: String
    /// SQLSTATE when the server reported one.
    public let sqlState: String?
    public let query: String?

    public init(code: Code, message: String, sqlState: String? = nil, query: String? = nil) {
        self.code = code
        self.message = message
        self.sqlState = sqlState
        self.query = query
    }

    /// What a failed statement means for the caller. A connection that is gone (the server
    /// restarted or went away: libpq's status is no longer OK, or SQLSTATE class 08 "connection
    /// exception" or 57 "operator intervention", such as 57P01 admin shutdown) is
    /// `connectionFailed`, so callers answer "retry shortly" (503) instead of blaming the query;
    /// the executor reconnects for the next job.
    public static func classify(sqlState: String?, connectionLost: Bool) -> Code {
        if connectionLost { return .connectionFailed }
        switch sqlState {
        case "23505": return .uniqueViolation
        // 57014 is a cancelled statement (statement_timeout): the query's problem, not the server's.
        case let state? where state.hasPrefix("08") || (state.hasPrefix("57") && state != "57014"): return .connectionFailed
        default: return .queryFailed
        }
    }

    public var description: String {
        var text = "postgres \(code): \(message)"
        if let sqlState { text += " [SQLSTATE \(sqlState)]" }
        return text
    }
}
