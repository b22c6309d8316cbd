/// Rows copied out of a `PGresult` as text: no libpq memory outlives the query call.
public struct PostgresRows: Sendable {
    public let columns: [String]
    public let rows: [[String?]]
    /// Rows affected by INSERT/UPDATE/DELETE (PQcmdTuples), 0 otherwise.
    public let affected: Int

    public var count: Int { rows.count }
    public var isEmpty: Bool { rows.isEmpty }

    public func value(_ row: Int, _ column: String) -> String? {
        guard let index = columns.firstIndex(of: column), row < rows.count else { return nil }
        return rows[row][index]
    }

    public func int(_ row: Int, _ column: String) -> Int64? {
        value(row, column).flatMap { Int64($0) }
    }

    /// One dictionary per row, for readable call sites.
    public var records: [[String: String?]] {
        rows.map { row in Dictionary(uniqueKeysWithValues: zip(columns, row)) }
    }
}
