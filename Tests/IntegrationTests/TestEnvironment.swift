import Foundation
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import PostgresClient
import StorecastRuntime
import StorecastTestSupport

/// Real parts for integration tests: one throwaway PostgreSQL per test process (a fresh database
/// per test), the built executables, free loopback ports.
enum TestEnvironment {
    struct Failure: Error, CustomStringConvertible { let description: String }

    nonisolated(unsafe) private static var postgres: LocalPostgres?
    private static let lock = NSLock()
    private static let runDirectory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("storecast-tests-\(ProcessInfo.processInfo.processIdentifier)")

    /// Starts the shared server on first use, then creates an empty database for the caller.
    static func freshDatabase() throws -> String {
        lock.lock()
        defer { lock.unlock() }
        if postgres == nil {
            postgres = try LocalPostgres.start(runDirectory: runDirectory, port: try freePort())
            atexit {
                TestEnvironment.postgres?.stop()
                try? FileManager.default.removeItem(at: TestEnvironment.runDirectory)
            }
        }
        return try postgres!.createDatabase("t_\(UUID().uuidString.prefix(8).lowercased())")
    }

    /// Stops the shared server, waits `down`, and starts it again on the same port: a database
    /// restart under running services.
    static func restartPostgres(down: Duration) async throws {
        let pg = try lock.withLock { () throws -> LocalPostgres in
            guard let pg = postgres else { throw Failure(description: "no PostgreSQL to restart") }
            return pg
        }
        pg.stop()
        try await Task.sleep(for: down)
        let started = try LocalPostgres.start(runDirectory: runDirectory, port: pg.port)
        lock.withLock { postgres = started }
    }

    static var repositoryRoot: URL { Fixtures.repositoryRoot() }

    static var migrationsDirectory: URL { repositoryRoot.appendingPathComponent("schemas/migrations") }

    /// Where `swift build` put the executables (STORECAST_BIN_DIR overrides).
    static func binary(_ name: String) throws -> URL {
        let dir = ProcessInfo.processInfo.environment["STORECAST_BIN_DIR"].map { URL(fileURLWithPath: $0) }
            ?? repositoryRoot.appendingPathComponent(".build/debug")
        let url = dir.appendingPathComponent(name)
        guard FileManager.default.isExecutableFile(atPath: url.path) else {
            throw Failure(description: "\(url.path) is missing: run `swift build` before `swift test` (deploy/local/test.sh does)")
        }
        return url
    }

    /// A TCP port nobody listens on right now (bind to 0, read it back, close).
    /// Ports already handed out in this test process: the kernel may offer a port again once its
    /// probe socket is closed, and two services of one stack then collide (seen in CI: a
    /// packager's HTTP and ZeroMQ endpoints got the same port).
    private static let handedOut = Mutex<Set<Int>>([])

    /// A port nothing listens on now and that this process has not handed out before.
    /// Two test processes run side by side in CI (deploy/local/test.sh): the second is given
    /// `STORECAST_TEST_PORTS=LOW-HIGH`, a range below the kernel's ephemeral ports
    /// (/proc/sys/net/ipv4/ip_local_port_range), and takes its ports there, so the two never
    /// hand out the same one; without it, ports come from the kernel (bind to 0).
    static let portRange: ClosedRange<Int>? = ProcessInfo.processInfo.environment["STORECAST_TEST_PORTS"].flatMap { text in
        let bounds = text.split(separator: "-").compactMap { Int($0) }
        return bounds.count == 2 && bounds[0] <= bounds[1] ? bounds[0]...bounds[1] : nil
    }

    static func freePort() throws -> Int {
        if let range = portRange {
            let start = Int.random(in: range)
            for offset in 0..<range.count {
                let port = range.lowerBound + (start - range.lowerBound + offset) % range.count
                guard (try? probeFreePort(port)) != nil else { continue }
                if handedOut.withLock({ $0.insert(port).inserted }) { return port }
            }
            throw Failure(description: "no free port left in STORECAST_TEST_PORTS \(range)")
        }
        for _ in 0..<100 {
            let port = try probeFreePort(0)
            if handedOut.withLock({ $0.insert(port).inserted }) { return port }
        }
        throw Failure(description: "cannot find a free port not handed out before")
    }

    /// Binds `port` (0: any) on 127.0.0.1 and closes it again; the port it got.
    private static func probeFreePort(_ port: Int) throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = UInt16(port).bigEndian
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) == 0 && getsockname(fd, $0, &len) == 0 }
        }
        guard bound else { throw Failure(description: "cannot find a free port") }
        return Int(UInt16(bigEndian: addr.sin_port))
    }

    static func which(_ tool: String) throws -> URL {
        for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let url = URL(fileURLWithPath: String(dir)).appendingPathComponent(tool)
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        throw Failure(description: "\(tool) not found on PATH; install it (deploy/local/test.sh installs ffmpeg and GStreamer)")
    }

    /// The control API's token in every stack of the tests (the API has no open mode).
    static let adminToken = "storecast-tests-admin-token-\(UUID().uuidString.prefix(8))"

    /// One set of CURVE keys for every stack of this test run (`storecast keys` would write the same files).
    static let zmqKeys: String = {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("storecast-keys-\(UUID().uuidString.prefix(8))").path
        try! ClusterKeys.generate(into: dir)
        return dir
    }()

    static func httpGet(_ url: String) async -> (status: Int, body: [UInt8])? {
        await http("GET", url)
    }

    /// A GET's body as text ("" when nothing answered): playlists.
    static func httpText(_ url: String) async -> String {
        String(decoding: await httpGet(url)?.body ?? [], as: UTF8.self)
    }

    /// A GET (or `method`) with request headers; the answer keeps its headers (names lowercased) and how long it took.
    static func httpExchange(_ url: String, method: String = "GET", headers: [String: String] = [:], timeout: Double = 15) async -> (status: Int, headers: [String: String], body: [UInt8], seconds: Double)? {
        guard let u = URL(string: url) else { return nil }
        var request = URLRequest(url: u)
        request.httpMethod = method
        request.timeoutInterval = timeout
        request.cachePolicy = .reloadIgnoringLocalCacheData
        for (k, v) in headers { request.setValue(v, forHTTPHeaderField: k) }
        let started = ContinuousClock.now
        guard let (data, response) = try? await URLSession.shared.data(for: request), let http = response as? HTTPURLResponse else { return nil }
        var fields: [String: String] = [:]
        for (k, v) in http.allHeaderFields { fields[String(describing: k).lowercased()] = String(describing: v) }
        let elapsed = ContinuousClock.now - started
        return (http.statusCode, fields, Array(data), Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }

    /// A GET (or `method`) read off a plain socket as it arrives: the status, headers (names
    /// lowercased), the body (chunked transfer decoded), how many bytes followed the head on the
    /// wire, whether the server closed the connection (not a timeout), and, for each read that
    /// brought body bytes, when it came.
    struct StreamedResponse {
        var status: Int
        var headers: [String: String]
        var body: [UInt8]
        var wireBodyBytes: Int
        var closed: Bool
        var bodyArrivals: [ContinuousClock.Instant]
    }

    static func streamedGet(port: Int, path: String, timeout: Int = 15, method: String = "GET", headers: [String: String] = [:]) async -> StreamedResponse? {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: blockingStreamedGet(port: port, path: path, timeout: timeout, method: method, headers: headers)) }
        }
    }

    private static func blockingStreamedGet(port: Int, path: String, timeout: Int, method: String, headers extra: [String: String]) -> StreamedResponse? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var wait = timeval(tv_sec: timeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = UInt16(port).bigEndian
        let connected = withUnsafePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        guard connected else { return nil }
        let fields = extra.map { "\($0.key): \($0.value)\r\n" }.joined()
        let request = Array("\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\(fields)Connection: close\r\n\r\n".utf8)
        guard send(fd, request, request.count, 0) == request.count else { return nil }
        var raw: [UInt8] = [], arrivals: [(ContinuousClock.Instant, Int)] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var closed = false
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            guard n > 0 else { closed = n == 0; break }
            raw += buffer[0..<n]
            arrivals.append((.now, raw.count))
        }
        let separator = Array("\r\n\r\n".utf8)
        guard let end = (0...max(0, raw.count - 4)).first(where: { raw[$0..<min($0 + 4, raw.count)].elementsEqual(separator) }) else { return nil }
        let lines = String(decoding: raw[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        guard let status = lines.first?.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else { return nil }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        var body = Array(raw[(end + 4)...])
        if headers["transfer-encoding"]?.lowercased() == "chunked" {
            var decoded: [UInt8] = [], p = 0
            while let lineEnd = (p..<max(p, body.count - 1)).first(where: { body[$0] == 13 && body[$0 + 1] == 10 }),
                  let size = Int(String(decoding: body[p..<lineEnd], as: UTF8.self).split(separator: ";")[0], radix: 16), size > 0, lineEnd + 2 + size <= body.count {
                decoded += body[(lineEnd + 2)..<(lineEnd + 2 + size)]
                p = lineEnd + 2 + size + 2
            }
            body = decoded
        }
        return StreamedResponse(status: status, headers: headers, body: body, wireBodyBytes: raw.count - (end + 4), closed: closed, bodyArrivals: arrivals.filter { $0.1 > end + 4 }.map(\.0))
    }

    /// The Python from deploy/local/test-tools.sh (m3u8 installed), and hls.js for the browser.
    static func testTool(_ relative: String) throws -> URL {
        let url = repositoryRoot.appendingPathComponent(".build/test-tools/\(relative)")
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw Failure(description: "\(url.path) is missing: run deploy/local/test-tools.sh (deploy/local/test.sh does)")
        }
        return url
    }

    /// One HTTP request; `json` becomes the body with `Content-Type: application/json`.
    /// `token`: sent as `Authorization: Bearer` to the control API's /v1 paths (default: the stacks' token).
    static func http(_ method: String, _ url: String, json: String? = nil, token: String? = TestEnvironment.adminToken) async -> (status: Int, body: [UInt8])? {
        guard let u = URL(string: url) else { return nil }
        var request = URLRequest(url: u)
        request.httpMethod = method
        if let token, u.path.hasPrefix("/v1/") { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        request.timeoutInterval = 5
        if let json {
            request.httpBody = Data(json.utf8)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        guard let (data, response) = try? await URLSession.shared.data(for: request), let http = response as? HTTPURLResponse else { return nil }
        return (http.statusCode, Array(data))
    }

    /// What `http` got, for a failure's message: the status and body, or that none came in time.
    static func describe(_ answer: (status: Int, body: [UInt8])?) -> String {
        answer.map { "\($0.status) \(String(decoding: $0.body, as: UTF8.self))" } ?? "no answer within 5 s"
    }
}
