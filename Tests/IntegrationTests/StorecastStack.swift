import Foundation

/// All five Storecast services as real processes on free loopback ports, against a fresh
/// database that `storecast migrate` prepared.
final class StorecastStack: @unchecked Sendable {
    let database: String
    let rtmpPort: Int
    let httpPort: Int
    let apiPort: Int
    let metricsPort: Int
    let logDirectory: URL
    /// The CURVE keys directory every service gets (`--zmq-keys`).
    let zmqKeys: String
    private(set) var services: [ServiceProcess] = []
    /// How each service was started, to start it again (`restart`).
    private var commands: [String: (binary: String, arguments: [String], environment: [String: String])] = [:]
    /// HTTP ports of extra packagers by node name (the first packager uses `httpPort`).
    private(set) var extraPackagerPorts: [String: Int] = [:]
    /// The ZeroMQ endpoints the services bind (ingest's work ROUTER, the packager's PULL, the
    /// collector's SUB): where a hostile peer on the network would connect.
    private(set) var zmqEndpoints: (work: String, renditions: String, telemetry: String) = ("", "", "")

    var playbackBase: String { "http://127.0.0.1:\(httpPort)" }
    func rtmpURL(key: String) -> String { "rtmp://127.0.0.1:\(rtmpPort)/live/\(key)" }

    init(zmqKeys: String = TestEnvironment.zmqKeys) throws {
        self.zmqKeys = zmqKeys
        database = try TestEnvironment.freshDatabase()
        rtmpPort = try TestEnvironment.freePort()
        httpPort = try TestEnvironment.freePort()
        apiPort = try TestEnvironment.freePort()
        metricsPort = try TestEnvironment.freePort()
        logDirectory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("storecast-stack-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: logDirectory, withIntermediateDirectories: true)
    }

    /// `storecast` CLI against this stack's database.
    func cli(_ arguments: [String]) async throws -> String {
        let (status, output) = try await ServiceProcess.run(try TestEnvironment.binary("storecast"), arguments + ["--database", database])
        guard status == 0 else { throw TestEnvironment.Failure(description: "storecast \(arguments.joined(separator: " ")) exited \(status): \(output)") }
        return output
    }

    /// Migrates, creates a tenant and a stream, returns the stream key.
    func provisionStream(tenant: String, stream: String) async throws -> String {
        _ = try await cli(["migrate", "--migrations", TestEnvironment.migrationsDirectory.path])
        _ = try await cli(["tenant", "create", tenant])
        let output = try await cli(["stream", "create", tenant, stream])
        guard let key = output.split(separator: "\n").first(where: { $0.hasPrefix("stream key") })?.split(separator: " ").last else {
            throw TestEnvironment.Failure(description: "no key in: \(output)")
        }
        return String(key)
    }

    /// Starts the services. `workers` names the transcoder workers (one process each, the name is
    /// also its node id); `workerArguments` and `packagerArguments` are added to their command lines.
    /// `extraPackagers` names more packager nodes (sharding); each gets its own ports.
    func start(workers: [String] = ["storecast-transcoder"], workerArguments: [String] = [], packagerArguments: [String] = [], extraPackagers: [String] = [], ingestArguments: [String] = [],
               workerEnvironment: [String: [String: String]] = [:], apiArguments: [String] = []) throws {
        let work = "tcp://127.0.0.1:\(try TestEnvironment.freePort())"
        let renditions = "tcp://127.0.0.1:\(try TestEnvironment.freePort())"
        let telemetry = "tcp://127.0.0.1:\(try TestEnvironment.freePort())"
        zmqEndpoints = (work, renditions, telemetry)
        var plan: [(name: String, binary: String, arguments: [String], environment: [String: String])] = [
            ("storecast-metrics", "storecast-metrics", ["--subscribe-endpoint", telemetry, "--http-host", "127.0.0.1", "--http-port", "\(metricsPort)"], [:]),
            ("storecast-packager", "storecast-packager", ["--pull-endpoint", renditions, "--metrics-endpoint", telemetry, "--database", database, "--http-host", "127.0.0.1", "--http-port", "\(httpPort)", "--node", "packager-main"] + packagerArguments, [:]),
            ("storecast-ingest", "storecast-ingest", ["--database", database, "--rtmp-host", "127.0.0.1", "--rtmp-port", "\(rtmpPort)", "--work-endpoint", work, "--packager-endpoint", renditions, "--metrics-endpoint", telemetry] + ingestArguments, [:]),
        ]
        for name in extraPackagers {
            let (port, pull) = (try TestEnvironment.freePort(), try TestEnvironment.freePort())
            extraPackagerPorts[name] = port
            plan.append((name, "storecast-packager", ["--pull-endpoint", "tcp://127.0.0.1:\(pull)", "--metrics-endpoint", telemetry, "--database", database,
                                                      "--http-host", "127.0.0.1", "--http-port", "\(port)", "--node", name] + packagerArguments, [:]))
        }
        for worker in workers {
            plan.append((worker, "storecast-transcoder", ["--ingest", work, "--metrics-endpoint", telemetry, "--preset", "ultrafast", "--node", worker] + workerArguments, workerEnvironment[worker] ?? [:]))
        }
        plan.append(("storecast-api", "storecast-api", ["--database", database, "--http-host", "127.0.0.1", "--http-port", "\(apiPort)", "--metrics-endpoint", telemetry,
                                                     "--playback-base-url", playbackBase, "--admin-token", TestEnvironment.adminToken] + apiArguments, [:]))
        for i in plan.indices { plan[i].arguments += ["--zmq-keys", zmqKeys] }
        for service in plan {
            commands[service.name] = (service.binary, service.arguments, service.environment)
            services.append(try ServiceProcess(name: service.name, executable: try TestEnvironment.binary(service.binary), arguments: service.arguments, environment: service.environment, logDirectory: logDirectory))
        }
    }

    func service(_ name: String) -> ServiceProcess? { services.last { $0.name == name } }

    /// Starts a service that was stopped or killed again with the same command line, as
    /// systemd or Kubernetes would (its log goes on in `NAME-2.log`, …).
    func restart(_ name: String) throws {
        guard let command = commands[name] else { throw TestEnvironment.Failure(description: "no service \(name)") }
        let runs = services.filter { $0.name == name || $0.name.hasPrefix(name + "-run") }.count
        let process = try ServiceProcess(name: "\(name)-run\(runs + 1)", executable: try TestEnvironment.binary(command.binary), arguments: command.arguments, environment: command.environment, logDirectory: logDirectory)
        services.append(process)
    }

    /// Polls until `condition` holds or `timeout` passes; returns whether it held.
    static func eventually(timeout: Duration, _ condition: () async throws -> Bool) async rethrows -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if try await condition() { return true }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return try await condition()
    }

    /// Ready when ingest has `workers` transcoder workers and the HTTP servers answer.
    func waitUntilReady(workers: Int = 1) async throws {
        let ready = await Self.eventually(timeout: .seconds(20)) {
            let ingest = service("storecast-ingest")?.log ?? ""
            guard ingest.components(separatedBy: "transcoder worker joined").count - 1 >= workers else { return false }
            return await TestEnvironment.httpGet("\(playbackBase)/healthz")?.status == 200
        }
        guard ready else { throw TestEnvironment.Failure(description: "stack did not become ready:\n\(logs())") }
    }

    /// SIGTERM every service and return the exit statuses by name.
    func stop() async -> [String: Int32] {
        var statuses: [String: Int32] = [:]
        for s in services.reversed() where s.isRunning { s.process.terminate() }
        for s in services { statuses[s.name] = await s.wait(timeout: 10) }
        return statuses
    }

    func logs() -> String {
        services.map { "==== \($0.name)\n\($0.log.suffix(4000))" }.joined(separator: "\n")
    }

    deinit {
        for s in services { s.stop(grace: 1) }
        try? FileManager.default.removeItem(at: logDirectory)
    }
}
