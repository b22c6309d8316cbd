import ArgumentParser
import Foundation
import PostgresClient
import StorecastRuntime

/// `storecast dev`: the whole stack on this machine, in the foreground, until Ctrl-C.
struct Dev: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run PostgreSQL and all five services locally, with a demo tenant and stream key.")

    @Option(help: "Git-ignored folder for the throwaway database and logs.") var runDirectory = ".run"
    @Option(help: "Port of the throwaway PostgreSQL.") var postgresPort = 54329
    @Option(help: "RTMP port.") var rtmpPort = 1935
    @Option(help: "Player and HLS port.") var httpPort = 8080
    @Option(help: "Player and HLS port over HTTPS with HTTP/2, with a self-signed certificate made under --run-directory (0: off).") var httpsPort = 8443
    @Option(help: "The packager's cap on open HTTP connections from one IP address (0: none; load tests from one machine need it off).") var httpMaxConnectionsPerIP: Int?
    @Option(help: "Control API port.") var apiPort = 8088
    @Option(help: "Prometheus /metrics port.") var metricsPort = 9100
    @Option(help: "First of three ZeroMQ ports (work, renditions, telemetry).") var zmqBasePort = 5601
    @Option(help: "Comma-separated rungs (default: every rung that fits the source).") var rungs = ""
    @Option(help: "x264 preset for the transcoder.") var preset = "veryfast"
    @Option(help: "1080p30 sources the transcoder takes at once (a source costs its pixel rate: 720p30 0.44 of a slot).") var slots = 2
    @Option(help: "The transcoder's fast start in seconds (0: off; see storecast-transcoder --help).") var fastStart: Double = 0.4
    @Option(help: "The packager's LL-HLS part target in seconds (0.2 to 0.5; 0: plain HLS).") var partTarget: Double = 0.2
    @Option(help: "Host name printed in URLs.") var publicHost = "127.0.0.1"
    @Flag(help: "Also pass the publisher's H.264 through as a `source` rendition (no transcoding).") var sourceRung = false
    @Option(help: "DVR window in seconds for the packager (0: off); its segments and recordings go under --run-directory.") var dvrWindow: Double = 0
    @Option(help: "A local hls.js build the packager serves for the player page (?player=hls.js, and browsers without native HLS).") var hlsjsFile: String?

    func run() async throws {
        let say: (String) -> Void = { print("storecast dev: \($0)"); fflush(nil) }
        let runURL = URL(fileURLWithPath: runDirectory)
        let postgres = try LocalPostgres.start(runDirectory: runURL, port: postgresPort, log: say)
        let executor = PostgresExecutor(conninfo: postgres.conninfo)
        say("migrating")
        _ = try await Storecast.migrate(executor, directory: nil)
        let catalog = StreamCatalog(database: executor)
        _ = try await catalog.createTenant(slug: "demo", name: "Demo Shop")
        let key = try await demoKey(catalog)
        executor.shutdown()

        // The same authenticated path as production: CURVE keys and an admin token of its own,
        // made once under the run directory (the keys' storecast.env holds the token).
        let keys = runURL.appendingPathComponent("keys").path
        if !FileManager.default.fileExists(atPath: "\(keys)/\(ClusterKeys.allowListFile)") {
            say("making CURVE keys and an admin token in \(keys)")
            try ClusterKeys.generate(into: keys)
        }
        let adminToken = try AdminToken.check(String(contentsOfFile: "\(keys)/\(ClusterKeys.envFile)", encoding: .utf8)
            .split(separator: "\n").first { $0.hasPrefix("STORECAST_ADMIN_TOKEN=") }?.dropFirst("STORECAST_ADMIN_TOKEN=".count).description)
        let bin = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        let work = "tcp://127.0.0.1:\(zmqBasePort)", renditions = "tcp://127.0.0.1:\(zmqBasePort + 1)", telemetry = "tcp://127.0.0.1:\(zmqBasePort + 2)"
        var transcoderArgs = ["--ingest", work, "--metrics-endpoint", telemetry, "--preset", preset, "--fast-start", "\(fastStart)", "--slots", "\(slots)"]
        if !rungs.isEmpty { transcoderArgs += ["--rungs", rungs] }
        if sourceRung { transcoderArgs.append("--source-rung") }
        var packagerArgs = ["--pull-endpoint", renditions, "--metrics-endpoint", telemetry, "--http-port", "\(httpPort)",
                            "--database", postgres.conninfo, "--public-url", "http://\(publicHost):\(httpPort)",
                            "--events-url", "http://\(publicHost):\(apiPort)"]
        if let hlsjsFile { packagerArgs += ["--hlsjs-file", hlsjsFile] }
        packagerArgs += ["--part-target", "\(partTarget)"]
        if let httpMaxConnectionsPerIP { packagerArgs += ["--http-max-connections-per-ip", "\(httpMaxConnectionsPerIP)"] }
        if httpsPort > 0 {
            let pair = try SelfSignedCertificate.ensure(in: runURL.appendingPathComponent("tls").path, hosts: [publicHost])
            packagerArgs += ["--https-port", "\(httpsPort)", "--tls-certificate", pair.certificate, "--tls-key", pair.key]
        }
        packagerArgs += ["--recordings-dir", runURL.appendingPathComponent("recordings").path]
        if dvrWindow > 0 { packagerArgs += ["--dvr-window", "\(dvrWindow)", "--dvr-dir", runURL.appendingPathComponent("dvr").path] }
        let services: [(String, [String])] = [
            ("storecast-metrics", ["--subscribe-endpoint", telemetry, "--http-port", "\(metricsPort)", "--http-host", "127.0.0.1"]),
            ("storecast-packager", packagerArgs),
            ("storecast-ingest", ["--database", postgres.conninfo, "--rtmp-port", "\(rtmpPort)", "--work-endpoint", work, "--packager-endpoint", renditions, "--metrics-endpoint", telemetry]),
            ("storecast-transcoder", transcoderArgs),
            ("storecast-api", ["--database", postgres.conninfo, "--http-port", "\(apiPort)", "--metrics-endpoint", telemetry,
                               "--rtmp-base-url", "rtmp://\(publicHost):\(rtmpPort)", "--playback-base-url", "http://\(publicHost):\(httpPort)", "--insecure-dev"]),
        ].map { ($0.0, $0.1 + ["--zmq-keys", keys]) }
        var children: [Process] = []
        for (name, args) in services {
            let p = Process()
            p.executableURL = bin.appendingPathComponent(name)
            p.arguments = args
            if name == "storecast-api" { p.environment = ProcessInfo.processInfo.environment.merging(["STORECAST_ADMIN_TOKEN": adminToken]) { $1 } }
            try p.run()
            children.append(p)
        }
        say("all services started")
        print("""

          Publish:  ffmpeg -re -i any.mp4 -c copy -f flv rtmp://\(publicHost):\(rtmpPort)/live/\(key)
          RTMP URL: rtmp://\(publicHost):\(rtmpPort)/live/\(key)
          Player:   http://\(publicHost):\(httpPort)/play/demo/demo-show
          Feed:     http://\(publicHost):\(httpPort)/feed/demo   (the shoppers' stories feed)
        \(httpsPort > 0 ? "  HTTPS:    https://\(publicHost):\(httpsPort)/play/demo/demo-show   (HTTP/2; the certificate is self-signed: accept it once)\n" : "")
          Playlist: http://\(publicHost):\(httpPort)/live/demo/demo-show/master.m3u8
          API:      http://127.0.0.1:\(apiPort)/v1/streams   (this host only)
          Token:    curl -H 'Authorization: Bearer \(adminToken)' http://127.0.0.1:\(apiPort)/v1/streams
          Metrics:  http://127.0.0.1:\(metricsPort)/metrics   (this host only)
          Keys:     \(keys)  (CURVE keys of every ZeroMQ socket; storecast.env holds the token)
          Database: \(postgres.url)

          Ctrl-C stops everything.

        """)
        fflush(nil)
        await waitForSignalOrChildExit(children)
        say("stopping services")
        for c in children where c.isRunning { kill(c.processIdentifier, SIGTERM) }
        let deadline = Date().addingTimeInterval(10)
        while children.contains(where: \.isRunning), Date() < deadline { try? await Task.sleep(for: .milliseconds(100)) }
        for c in children where c.isRunning { kill(c.processIdentifier, SIGKILL) }
        postgres.stop()
        say("stopped")
    }

    /// The demo stream's key is rotated on each run: only its hash is stored, so it cannot be shown again.
    private func demoKey(_ catalog: StreamCatalog) async throws -> String {
        let key = StreamKey.generate()
        let rows = try await catalog.database.execute(
            "UPDATE streams SET stream_key_hash = $1, key_prefix = $2, status = 'idle' WHERE slug = 'demo-show' AND tenant_id = (SELECT id FROM tenants WHERE slug = 'demo')",
            [StreamKey.hash(key), StreamKey.prefix(key)])
        if rows.affected == 0 {
            _ = try await catalog.createStream(tenantSlug: "demo", slug: "demo-show", title: "Demo show", key: key)
        }
        return key
    }

    private func waitForSignalOrChildExit(_ children: [Process]) async {
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGINT)
        let termSource = DispatchSource.makeSignalSource(signal: SIGTERM)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let once = OnceFlag()
            let finish: @Sendable () -> Void = { if once.set() { continuation.resume() } }
            source.setEventHandler(handler: finish)
            termSource.setEventHandler(handler: finish)
            source.resume()
            termSource.resume()
            for child in children {
                child.terminationHandler = { p in
                    print("storecast dev: \(p.executableURL?.lastPathComponent ?? "a service") exited with status \(p.terminationStatus); stopping the stack")
                    finish()
                }
            }
        }
    }
}

final class OnceFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var done = false
    func set() -> Bool {
        lock.lock(); defer { lock.unlock() }
        if done { return false }
        done = true
        return true
    }
}
