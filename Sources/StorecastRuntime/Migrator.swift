import Foundation
import PostgresClient

/// Applies the numbered SQL files of `schemas/migrations` in order, each once, each in its own
/// transaction, recording them in `schema_migrations`. Safe to run again and from several
/// processes at once (an advisory lock serialises them).
public struct Migrator: Sendable {
    public struct Migration: Sendable, Equatable {
        public var version: Int
        public var name: String
        public var sql: String
    }

    public let migrations: [Migration]

    public init(directory: URL) throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".sql") }.sorted()
        migrations = try files.map { file in
            guard let version = Int(file.prefix(while: \.isNumber)) else {
                throw PostgresError(code: .queryFailed, message: "migration file \(file) must start with its number, e.g. 0002_name.sql", sqlState: nil, query: nil)
            }
            return Migration(version: version, name: file, sql: try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8))
        }
    }

    /// Finds `schemas/migrations` next to the current directory or the executable, or at
    /// `STORECAST_SCHEMAS`.
    public static func locateDirectory() -> URL? {
        var candidates: [URL] = []
        if let env = ProcessInfo.processInfo.environment["STORECAST_SCHEMAS"] {
            candidates.append(URL(fileURLWithPath: env).appendingPathComponent("migrations"))
        }
        var dir = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
        var exe = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<6 {
            candidates.append(dir.appendingPathComponent("schemas/migrations"))
            candidates.append(exe.appendingPathComponent("schemas/migrations"))
            dir = dir.deletingLastPathComponent()
            exe = exe.deletingLastPathComponent()
        }
        candidates.append(URL(fileURLWithPath: "/usr/share/storecast/schemas/migrations"))
        return candidates.first { FileManager.default.fileExists(atPath: $0.path) }
    }

    /// Applies pending migrations and returns the versions applied now.
    public func apply(on database: PostgresExecutor) async throws -> [Int] {
        let migrations = self.migrations
        return try await database.run { conn in
            try conn.execute("SELECT pg_advisory_lock(7310)")
            defer { _ = try? conn.execute("SELECT pg_advisory_unlock(7310)") }
            try conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())")
            let done = Set(try conn.execute("SELECT version FROM schema_migrations").rows.compactMap { $0[0].flatMap { Int($0) } })
            var applied: [Int] = []
            for m in migrations where !done.contains(m.version) {
                try conn.transaction {
                    try conn.executeScript(m.sql)
                    try conn.execute("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", [String(m.version), m.name])
                }
                applied.append(m.version)
            }
            return applied
        }
    }
}
