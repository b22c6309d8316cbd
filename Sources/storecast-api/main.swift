import ArgumentParser
import ConnectionBudget
import ControlPlane
import Foundation
import Hummingbird
import Logging
import PostgresClient
import StorecastRuntime
import ZeroMQ

@main
struct APICommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "storecast-api", abstract: "Control API: tenants and streams, as JSON over HTTP.")

    @Option(help: "PostgreSQL connection string.") var database: String
    @Option(help: "HTTP address (default: this host only; 0.0.0.0 for every interface).") var httpHost = "127.0.0.1"
    @Option(help: "HTTP port.") var httpPort = 8088
    @Option(help: "Operator bearer token (or STORECAST_ADMIN_TOKEN); required, at least 24 characters, not a placeholder (`storecast keys` writes one).") var adminToken: String?
    @Option(help: "Public RTMP base URL written into publish URLs.") var rtmpBaseURL = "rtmp://127.0.0.1:1935"
    @Option(help: "Public packager base URL written into playback URLs.") var playbackBaseURL = "http://127.0.0.1:8080"
    @Option(help: "ZeroMQ endpoint of the metrics collector.") var metricsEndpoint = "tcp://127.0.0.1:5603"
    @Option(help: "Directory of the cluster's CURVE keys (`storecast keys DIR` writes it; default: $STORECAST_ZMQ_KEYS). Every ZeroMQ socket is authenticated with them.") var zmqKeys: String?
    @Option(help: "Seconds a connection has to send its request headers, and an idle keep-alive connection stays open.") var httpIdleTimeout: Double = 10
    @Option(help: "Open HTTP connections from one IP address (0: no cap).") var httpMaxConnectionsPerIP = HTTPConnectionLimits().maximumConnectionsPerIP
    @Option(parsing: .upToNextOption, help: "IP addresses of proxies in front of the API (load balancers) whose X-Forwarded-For names the client; wrong tokens are limited per client address.") var trustedProxy: [String] = []
    @Flag(help: "Let webhooks go to loopback, private and link-local addresses (development; by default they are refused, so a tenant cannot reach into your networks).") var webhookAllowPrivateNetworks = false
    @Flag(help: "Development on this machine only: start without an admin token (a random one is made and logged), and let webhooks reach loopback and private addresses. Refused with an --http-host other than loopback. Never in production.") var insecureDev = false
    @Option(help: .hidden) var webhookRetryScale = 1.0
    @Option(help: .hidden) var webhookHoldSeconds = 60
    @Option(help: "Log level.") var logLevel = "info"

    func run() async throws {
        Observability.bootstrap(service: "api", logLevel: Logger.Level(rawValue: logLevel) ?? .info)
        let logger = Logger(label: "storecast.api")
        let database = PostgresExecutor(conninfo: self.database, name: "api-db")
        if insecureDev { try InsecureDevMode.checkHost(httpHost) }
        let (token, madeToken) = try AdminToken.checkOrMake(adminToken ?? ProcessInfo.processInfo.environment["STORECAST_ADMIN_TOKEN"], insecureDev: insecureDev)
        if insecureDev {
            logger.warning("insecure development mode: this host only, webhooks may reach private networks; never use it in production",
                           metadata: madeToken ? ["admin_token": "\(token)", "admin_token_source": "made for this run"] : ["admin_token_source": "given"])
        }
        var httpLimits = HTTPConnectionLimits()
        httpLimits.idleTimeout = .milliseconds(Int(max(1, httpIdleTimeout) * 1000))
        httpLimits.maximumConnectionsPerIP = max(0, httpMaxConnectionsPerIP)
        let feed = StreamEventFeed(database: database, logger: logger)
        var webhooks = WebhookDispatcher.Settings()
        webhooks.allowInternalAddresses = webhookAllowPrivateNetworks || insecureDev
        webhooks.retryScale = max(0.0001, min(1, webhookRetryScale))
        webhooks.holdSeconds = webhookHoldSeconds
        let catalog = StreamCatalog(database: database)
        let app = Application(
            router: ControlAPI.router(catalog: catalog, adminToken: token, rtmpBaseURL: rtmpBaseURL, playbackBaseURL: playbackBaseURL, trustedProxies: Set(trustedProxy), webhooks: webhooks, feed: feed),
            server: ControlAPI.server(limits: httpLimits, catalog: catalog, feed: feed, logger: logger),
            configuration: .guarded(host: httpHost, port: httpPort, serverName: "storecast-api", limits: httpLimits),
            onServerRunning: httpLimits.onServerRunning, logger: logger)
        let telemetry = TelemetryReporter(collectorEndpoint: metricsEndpoint, service: "api", node: NodeIdentity.defaultNodeID(service: "api"), context: try ClusterKeys.context(option: zmqKeys, role: .api, logger: logger), logger: logger)
        let dispatcher = WebhookDispatcher(database: database, settings: webhooks, logger: logger)
        try await ServiceRunner.run([app, dispatcher, feed, telemetry], logger: logger)
        database.shutdown()
    }
}
