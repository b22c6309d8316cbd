import Foundation
import ArgumentParser
import ConnectionBudget
import Logging
import Packager
import PostgresClient
import StorecastRuntime
import ZeroMQ

@main
struct PackagerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "storecast-packager", abstract: "Packager: CMAF segments and HLS playlists, served over HTTP.")

    @Option(help: "ZeroMQ endpoint transcoders push renditions to (bound here; tcp://*:5602 for every interface, with --advertise-endpoint).") var pullEndpoint = "tcp://127.0.0.1:5602"
    @Option(help: "ZeroMQ endpoint of the metrics collector.") var metricsEndpoint = "tcp://127.0.0.1:5603"
    @Option(help: "HTTP address.") var httpHost = "0.0.0.0"
    @Option(help: "HTTP port.") var httpPort = 8080
    @Option(help: "HTTPS port: HTTP/2 (and HTTP/1.1) over TLS, beside plain HTTP/1.1 on --http-port. Browsers open at most 6 HTTP/1.1 connections to a host and an LL-HLS player can hold about 4; over HTTP/2 two players on a page (the feed's current show and the next) share one connection. Needs --tls-certificate and --tls-key.") var httpsPort = 8443
    @Option(help: "PEM certificate chain for the HTTPS port (the server's certificate first); with --tls-key it turns HTTPS on. `storecast dev` makes a self-signed pair.") var tlsCertificate: String?
    @Option(help: "PEM private key (unencrypted) of --tls-certificate.") var tlsKey: String?
    @Option(help: "Target segment duration in seconds.") var segmentDuration: Double = 2
    @Option(help: "Segments kept in memory and in each live playlist.") var window = 10
    @Option(help: "DVR window in seconds (for example 7200): older segments stay listed and are served from --dvr-dir; 0 turns it off.") var dvrWindow: Double = 0
    @Option(help: "Directory of the DVR window's segments.") var dvrDir = "dvr"
    @Option(help: "Seconds an ended stream stays servable before it leaves memory.") var endedRetention: Double = 120
    @Option(help: "Low-Latency HLS part target in seconds (0.2 to 0.5); 0 serves plain HLS without parts.") var partTarget: Double = 0.2
    @Option(help: "Parts are written as CMAF chunks of about this many seconds and streamed to players waiting on the preload hint (each chunk adds ~100 bytes); 0 writes a part as one chunk.") var chunkTarget: Double = 0.1
    @Option(help: "The player page's choice where the browser has both: auto (hls.js wherever MSE exists and the browser is not Safari, whose own player does LL-HLS), native (Chromium's ignores parts and plays about 3 segments behind) or hls.js. hls.js needs --hlsjs-url or --hlsjs-file (or \(PackagerCommand.bundledHlsJS), which the Docker image ships); without it the page plays natively.") var player = "auto"
    @Option(help: "URL of hls.js for browsers without native HLS (optional).") var hlsjsURL: String?
    @Option(help: "A local hls.js build to serve at /assets/hls.js (and to use on the player page when --hlsjs-url is not given; default: \(PackagerCommand.bundledHlsJS) when it exists).") var hlsjsFile: String?

    /// Where the Docker image puts hls.js; used when neither --hlsjs-url nor --hlsjs-file is given.
    static let bundledHlsJS = "/usr/share/storecast/hls.min.js"
    @Option(help: "Base URL players reach the control API at (for example https://api.example.com): the player page waits on a stream's events there instead of polling its playlist until the show starts, and /feed/TENANT reads the tenant's stories feed there.") var eventsURL: String?
    @Option(help: "PostgreSQL connection string: private streams and playback tokens. Without it every stream is public.") var database: String?
    @Option(help: "Directory recordings are written to (streams with recording on; needs --database).") var recordingsDir = "recordings"
    @Option(help: "ZeroMQ endpoint transcoders reach this packager at, registered for sharding (default: --pull-endpoint with * as 127.0.0.1).") var advertiseEndpoint: String?
    @Option(help: "Base URL players reach this packager at, registered for sharding (default: http://127.0.0.1:<http-port>).") var publicURL: String?
    @Option(help: "Node name (default: packager-HOST-HTTPPORT, stable across restarts: the packages it continues after one are found by it).") var node: String?
    @Option(help: "Directory of the cluster's CURVE keys (`storecast keys DIR` writes it; default: $STORECAST_ZMQ_KEYS). Every ZeroMQ socket is authenticated with them.") var zmqKeys: String?
    @Option(help: "Seconds a connection has to send its request headers, and an idle keep-alive connection stays open.") var httpIdleTimeout: Double = 10
    @Option(help: "Open HTTP connections from one IP address (0: no cap).") var httpMaxConnectionsPerIP = HTTPConnectionLimits().maximumConnectionsPerIP
    @Option(parsing: .upToNextOption, help: "IP addresses of proxies in front of this packager (CDN edges, load balancers) whose X-Forwarded-For names the viewer; from anyone else it is ignored.") var trustedProxy: [String] = []
    @Option(help: "Seconds without media after which a live stream is ended here (its playlists get ENDLIST): its transcoder went away without an end. Keep it above ingest's reconnect window plus a worker failover, so a stall, a reconnect or a worker's kill -9 never ends a show.") var idleEnd: Double = 30
    @Option(help: "Seconds after its expiry a worker's lease ticket is still taken, for this node's clock running ahead of ingest's (keep nodes in step with NTP).") var leaseClockSkew: Double = 30
    @Option(help: "Log level.") var logLevel = "info"

    func run() async throws {
        Observability.bootstrap(service: "packager", logLevel: Logger.Level(rawValue: logLevel) ?? .info)
        let logger = Logger(label: "storecast.packager")
        guard partTarget == 0 || (0.2...0.5).contains(partTarget) else {
            throw ValidationError("--part-target must be between 0.2 and 0.5 seconds, or 0 for plain HLS (got \(partTarget)).")
        }
        guard chunkTarget >= 0, partTarget == 0 || chunkTarget <= partTarget else {
            throw ValidationError("--chunk-target must be between 0 and the part target (\(partTarget) s), got \(chunkTarget).")
        }
        let nodeID = node ?? NodeIdentity.stableNodeID(service: "packager", port: httpPort)
        if database == nil { logger.warning("no --database: private streams cannot be checked, every stream plays without a token") }
        var hlsJS: [UInt8]?
        let hlsjsFile = hlsjsFile ?? (hlsjsURL == nil && FileManager.default.isReadableFile(atPath: Self.bundledHlsJS) ? Self.bundledHlsJS : nil)
        if let hlsjsFile {
            guard let data = FileManager.default.contents(atPath: hlsjsFile) else {
                throw ValidationError("--hlsjs-file \(hlsjsFile) cannot be read; give the path of an hls.js build (hls.min.js).")
            }
            hlsJS = Array(data)
        }
        let context = try ClusterKeys.context(option: zmqKeys, role: .packager, logger: logger)
        var configuration = PackagerService.Configuration(pullEndpoint: pullEndpoint, httpHost: httpHost, httpPort: httpPort, targetSegmentDuration: segmentDuration, windowSegments: window, hlsJSURL: hlsjsURL ?? (hlsJS == nil ? nil : "/assets/hls.js"), hlsJS: hlsJS, partTarget: partTarget == 0 ? nil : partTarget)
        configuration.chunkTarget = chunkTarget
        configuration.leaseKey = try ClusterKeys.leaseKey(option: zmqKeys, role: .packager)
        configuration.leaseClockSkew = .milliseconds(Int(min(86_400, max(0, leaseClockSkew)) * 1000))
        configuration.idleEnd = .milliseconds(Int(min(86_400, max(1, idleEnd)) * 1000))
        configuration.trustedProxies = Set(trustedProxy)
        configuration.httpLimits.idleTimeout = .milliseconds(Int(max(1, httpIdleTimeout) * 1000))
        configuration.httpLimits.maximumConnectionsPerIP = max(0, httpMaxConnectionsPerIP)
        switch (tlsCertificate, tlsKey) {
        case (let certificate?, let key?):
            guard (1...65535).contains(httpsPort), httpsPort != httpPort else { throw ValidationError("--https-port must be a port other than --http-port (\(httpPort)), got \(httpsPort).") }
            configuration.secureListener = .init(port: httpsPort, tls: TLSFiles(certificateChainPath: certificate, privateKeyPath: key))
        case (nil, nil): break
        default: throw ValidationError("HTTPS needs both --tls-certificate and --tls-key (PEM files); give both, or neither for plain HTTP only.")
        }
        guard let preferred = PlayerPreference(rawValue: player) else {
            throw ValidationError("--player is \(PlayerPreference.allCases.map(\.rawValue).joined(separator: " or ")), not \(player).")
        }
        if preferred == .hlsJS, hlsjsURL == nil, hlsjsFile == nil { throw ValidationError("--player hls.js needs --hlsjs-url or --hlsjs-file: the page has to load hls.js from somewhere.") }
        configuration.preferredPlayer = preferred
        if let eventsURL {
            guard let url = URL(string: eventsURL), ["http", "https"].contains(url.scheme ?? ""), url.host != nil, url.query == nil else {
                throw ValidationError("--events-url must be an http(s) base URL such as https://api.example.com, not \(eventsURL).")
            }
            configuration.eventsBaseURL = eventsURL.hasSuffix("/") ? String(eventsURL.dropLast()) : eventsURL
        }
        configuration.recordingsDirectory = recordingsDir
        configuration.dvrWindow = dvrWindow
        configuration.dvrDirectory = dvrDir
        configuration.endedRetention = .milliseconds(Int64(endedRetention * 1000))
        configuration.node = nodeID
        configuration.advertisedEndpoint = advertiseEndpoint ?? pullEndpoint.replacingOccurrences(of: "*", with: "127.0.0.1")
        configuration.publicURL = publicURL ?? "http://127.0.0.1:\(httpPort)"
        let packager = PackagerService(
            configuration: configuration,
            context: context, database: database.map { PostgresExecutor(conninfo: $0, name: "packager-db") }, logger: logger)
        let telemetry = TelemetryReporter(collectorEndpoint: metricsEndpoint, service: "packager", node: nodeID, context: context, logger: logger)
        try await ServiceRunner.run([packager, telemetry], logger: logger)
    }
}
