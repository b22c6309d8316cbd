import Crypto
import Foundation

/// A throwaway PostgreSQL server for `storecast dev` and the tests: initdb into a folder,
/// listen on 127.0.0.1 only, trust authentication, fsync off. Never for production.
///
/// PostgreSQL refuses to run as root; as root the cluster runs as the `postgres` user in a
/// folder under /var/tmp that it can reach, linked from the run folder.
public final class LocalPostgres: Sendable {
    public let dataDirectory: String
    public let port: Int
    public let database = "storecast"
    public let user = "storecast"
    private let binDirectory: String
    private let runAsPostgresUser: Bool

    public var conninfo: String { "host=127.0.0.1 port=\(port) user=\(user) dbname=\(database) connect_timeout=5" }
    public var url: String { "postgresql://\(user)@127.0.0.1:\(port)/\(database)" }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Starts (initialising if needed) a cluster for `runDirectory` and creates the database.
    public static func start(runDirectory: URL, port: Int, log: (String) -> Void = { _ in }) throws -> LocalPostgres {
        let bin = try locateBinaries()
        let isRoot = getuid() == 0
        let fm = FileManager.default
        try fm.createDirectory(at: runDirectory, withIntermediateDirectories: true)
        let data: String
        if isRoot {
            let digest = SHA256.hash(data: Data(runDirectory.standardizedFileURL.path.utf8)).prefix(6).map { String(format: "%02x", $0) }.joined()
            let base = "/var/tmp/storecast-postgres-\(digest)"
            try fm.createDirectory(atPath: base, withIntermediateDirectories: true)
            _ = try run(["chown", "postgres:postgres", base])
            data = base + "/data"
            let link = runDirectory.appendingPathComponent("postgres").path
            if (try? fm.destinationOfSymbolicLink(atPath: link)) != base {
                try? fm.removeItem(atPath: link)
                try? fm.createSymbolicLink(atPath: link, withDestinationPath: base)
            }
        } else {
            data = runDirectory.appendingPathComponent("postgres/data").path
            try fm.createDirectory(atPath: (data as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        }
        let pg = LocalPostgres(dataDirectory: data, port: port, binDirectory: bin, runAsPostgresUser: isRoot)
        if !fm.fileExists(atPath: data + "/PG_VERSION") {
            log("initialising PostgreSQL cluster in \(data)")
            try pg.pgCommand(["initdb", "-D", data, "-U", pg.user, "--auth=trust", "-E", "UTF8", "--no-sync", "--no-instructions"])
        }
        // A cluster left running by a killed run is stopped first so the port setting applies.
        if fm.fileExists(atPath: data + "/postmaster.pid") {
            _ = try? pg.pgCommand(["pg_ctl", "-D", data, "-m", "immediate", "stop"])
        }
        log("starting PostgreSQL on 127.0.0.1:\(port)")
        let logFile = (data as NSString).deletingLastPathComponent + "/postgres.log"
        // Not captured: the server inherits pg_ctl's descriptors, and a pipe it holds open would
        // never reach end-of-file.
        try pg.pgCommand(capture: false, [
            "pg_ctl", "-D", data, "-l", logFile, "-w", "-t", "60",
            "-o", "-p \(port) -c listen_addresses=127.0.0.1 -k /tmp -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200",
            "start",
        ])
        let exists = try pg.pgCommand(["psql", "-h", "127.0.0.1", "-p", "\(port)", "-U", pg.user, "-d", "postgres", "-tAc", "SELECT 1 FROM pg_database WHERE datname = '\(pg.database)'"])
        if !exists.contains("1") {
            try pg.pgCommand(["createdb", "-h", "127.0.0.1", "-p", "\(port)", "-U", pg.user, pg.database])
        }
        return pg
    }

    private init(dataDirectory: String, port: Int, binDirectory: String, runAsPostgresUser: Bool) {
        self.dataDirectory = dataDirectory
        self.port = port
        self.binDirectory = binDirectory
        self.runAsPostgresUser = runAsPostgresUser
    }

    /// Creates an empty database for one test and returns its conninfo.
    public func createDatabase(_ name: String) throws -> String {
        try pgCommand(["createdb", "-h", "127.0.0.1", "-p", "\(port)", "-U", user, name])
        return "host=127.0.0.1 port=\(port) user=\(user) dbname=\(name) connect_timeout=5"
    }

    public func stop() {
        _ = try? pgCommand(["pg_ctl", "-D", dataDirectory, "-m", "fast", "-w", "stop"])
    }

    @discardableResult
    private func pgCommand(capture: Bool = true, _ arguments: [String]) throws -> String {
        var args = arguments
        args[0] = binDirectory + "/" + args[0]
        if runAsPostgresUser { args = ["runuser", "-u", "postgres", "--"] + args }
        return try Self.run(args, capture: capture)
    }

    @discardableResult
    static func run(_ arguments: [String], capture: Bool = true) throws -> String {
        if !capture { return try spawnAndWait(arguments) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: "/tmp")
        let pipe = Pipe()
        if capture {
            process.standardOutput = pipe
            process.standardError = pipe
        } else {
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
        }
        try process.run()
        let output = capture ? String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self) : ""
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(description: "\(arguments.joined(separator: " ")) exited \(process.terminationStatus): \(output)")
        }
        return output
    }

    /// posix_spawn + waitpid for commands that leave a daemon behind (pg_ctl start): Foundation's
    /// Process notices exit through a descriptor the daemon would inherit and hold for ever.
    private static func spawnAndWait(_ arguments: [String]) throws -> String {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let rc = posix_spawnp(&pid, arguments[0], &actions, nil, argv, environ)
        guard rc == 0 else { throw Failure(description: "cannot start \(arguments[0]): error \(rc)") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let exited = status & 0x7F == 0
        let code = (status >> 8) & 0xFF
        guard exited && code == 0 else {
            throw Failure(description: "\(arguments.joined(separator: " ")) failed (status \(status)); see the PostgreSQL log next to the data folder")
        }
        return ""
    }

    static func locateBinaries() throws -> String {
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).compactMap(Int.init).sorted(by: >)
        for v in versions where FileManager.default.isExecutableFile(atPath: "\(root)/\(v)/bin/pg_ctl") {
            return "\(root)/\(v)/bin"
        }
        if let out = try? run(["pg_config", "--bindir"]) {
            let dir = out.trimmingCharacters(in: .whitespacesAndNewlines)
            if FileManager.default.isExecutableFile(atPath: dir + "/pg_ctl") { return dir }
        }
        throw Failure(description: "PostgreSQL server binaries not found; install them with `apt-get install postgresql`")
    }
}
