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

    public var description: String {
        var text = "postgres \(code): \(message)"
        if let sqlState { text += " [SQLSTATE \(sqlState)]" }
        return text
    }
}
