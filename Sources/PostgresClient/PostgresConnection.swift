private import CPostgres
#if canImport(Glibc)
import Glibc
#endif

/// Owns one libpq `PGconn`. Every call blocks on the network: use it from a
/// ``PostgresExecutor`` thread, never from Swift's cooperative pool.
public final class PostgresConnection {
    private let handle: OpaquePointer
    public let conninfo: String

    /// Connects with `conninfo` (key=value pairs or a postgresql:// URL). `defaults` are
    /// connection settings (libpq keywords) that apply unless `conninfo` sets them itself.
    public init(conninfo: String, defaults: [(keyword: String, value: String)] = [], applicationName: String = "storecast") throws {
        self.conninfo = conninfo
        // PQconnectdbParams with expand_dbname: `conninfo`, given as the last dbname, is expanded
        // in place and overrides the defaults before it.
        let keywords: [String?] = defaults.map(\.keyword) + ["dbname", nil]
        let values: [String?] = defaults.map(\.value) + [conninfo, nil]
        let made: OpaquePointer? = Self.withCStrings(keywords) { k in
            Self.withCStrings(values) { v in PQconnectdbParams(k, v, 1) }
        }
        guard let conn = made else {
            throw PostgresError(code: .connectionFailed, message: "out of memory", sqlState: nil, query: nil)
        }
        guard PQstatus(conn) == CONNECTION_OK else {
            let message = String(cString: PQerrorMessage(conn)).trimmingTrailingNewlines
            PQfinish(conn)
            throw PostgresError(code: .connectionFailed, message: message, sqlState: nil, query: nil)
        }
        handle = conn
        // libpq prints NOTICEs ("relation … already exists, skipping") to stderr by default;
        // they are not errors, and structured logs are the caller's business.
        PQsetNoticeProcessor(conn, { _, _ in }, nil)
        _ = try? execute("SELECT set_config('application_name', $1, false)", [applicationName])
    }

    deinit { PQfinish(handle) }

    public var isHealthy: Bool { PQstatus(handle) == CONNECTION_OK }

    /// Re-establishes a broken connection (PQreset).
    public func reset() { PQreset(handle) }

    /// Runs one statement with text parameters `$1…$n` (nil is SQL NULL).
    @discardableResult
    public func execute(_ sql: String, _ parameters: [String?] = []) throws -> PostgresRows {
        let result: OpaquePointer? = Self.withCStrings(parameters) { pointers in
            PQexecParams(handle, sql, Int32(parameters.count), nil, pointers, nil, nil, 0)
        }
        guard let result else {
            throw PostgresError(code: PostgresError.classify(sqlState: nil, connectionLost: !isHealthy), message: String(cString: PQerrorMessage(handle)).trimmingTrailingNewlines, sqlState: nil, query: sql)
        }
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            let message = String(cString: PQresultErrorMessage(result)).trimmingTrailingNewlines
            let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
            throw PostgresError(code: PostgresError.classify(sqlState: state, connectionLost: !isHealthy), message: message, sqlState: state, query: sql)
        }
        let columnCount = Int(PQnfields(result))
        let rowCount = Int(PQntuples(result))
        let columns = (0..<columnCount).map { String(cString: PQfname(result, Int32($0))) }
        var rows: [[String?]] = []
        rows.reserveCapacity(rowCount)
        for r in 0..<rowCount {
            rows.append((0..<columnCount).map { c in
                PQgetisnull(result, Int32(r), Int32(c)) == 1 ? nil : String(cString: PQgetvalue(result, Int32(r), Int32(c)))
            })
        }
        let affected = Int(String(cString: PQcmdTuples(result))) ?? 0
        return PostgresRows(columns: columns, rows: rows, affected: affected)
    }

    /// Runs `body` in a transaction: COMMIT when it returns, ROLLBACK when it throws.
    public func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN")
        do {
            let value = try body()
            try execute("COMMIT")
            return value
        } catch {
            _ = try? execute("ROLLBACK")
            throw error
        }
    }

    /// Starts listening on `channel` (LISTEN): the server then sends this connection a
    /// notification for every NOTIFY on it, at the notifier's COMMIT. `channel` must be a plain
    /// lower-case identifier (it cannot be passed as a parameter).
    public func listen(_ channel: String) throws {
        guard Self.isPlainIdentifier(channel) else {
            throw PostgresError(code: .queryFailed, message: "channel \"\(channel)\" is not a plain identifier (a-z, 0-9, _)", sqlState: nil, query: nil)
        }
        try execute("LISTEN \(channel)")
    }

    /// The notifications received on the channels this connection listens to, waiting up to
    /// `timeout` seconds for the first; empty when none came in that time. Throws when the
    /// connection is lost (listen again on a new one).
    public func notifications(waitingUpTo timeout: Double) throws -> [PostgresNotification] {
        let pending = drainNotifications()
        if !pending.isEmpty { return pending }
        let socket = PQsocket(handle)
        guard socket >= 0 else {
            throw PostgresError(code: .connectionFailed, message: "the connection has no socket", sqlState: nil, query: nil)
        }
        var pollfd = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        let ready = poll(&pollfd, 1, Int32(max(0, min(timeout, 3_600)) * 1000))
        if ready < 0 && errno != EINTR {
            throw PostgresError(code: .connectionFailed, message: "poll on the connection failed (errno \(errno))", sqlState: nil, query: nil)
        }
        guard ready > 0 else { return [] }
        guard PQconsumeInput(handle) == 1 else {
            throw PostgresError(code: .connectionFailed, message: String(cString: PQerrorMessage(handle)).trimmingTrailingNewlines, sqlState: nil, query: nil)
        }
        return drainNotifications()
    }

    private func drainNotifications() -> [PostgresNotification] {
        var received: [PostgresNotification] = []
        while let notice = PQnotifies(handle) {
            received.append(PostgresNotification(channel: String(cString: notice.pointee.relname), payload: String(cString: notice.pointee.extra)))
            PQfreemem(notice)
        }
        return received
    }

    static func isPlainIdentifier(_ name: String) -> Bool {
        guard let first = name.utf8.first, (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(first) || first == UInt8(ascii: "_"), name.utf8.count <= 63 else { return false }
        return name.utf8.allSatisfy { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || $0 == UInt8(ascii: "_") }
    }

    /// Runs a script of several statements without parameters (migrations).
    public func executeScript(_ sql: String) throws {
        guard let result = PQexec(handle, sql) else {
            throw PostgresError(code: .queryFailed, message: String(cString: PQerrorMessage(handle)), sqlState: nil, query: nil)
        }
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK || status == PGRES_EMPTY_QUERY else {
            let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
            throw PostgresError(code: .queryFailed, message: String(cString: PQresultErrorMessage(result)).trimmingTrailingNewlines, sqlState: state, query: nil)
        }
    }

    private static func withCStrings<R>(_ values: [String?], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
        let storage: [UnsafeMutablePointer<CChar>?] = values.map { $0.map { strdup($0) } ?? nil }
        defer { storage.forEach { free($0) } }
        return body(storage.map { $0.map { UnsafePointer($0) } })
    }
}

extension String {
    var trimmingTrailingNewlines: String {
        var s = self
        while s.last == "\n" || s.last == " " { s.removeLast() }
        return s
    }
}
