import ArgumentParser
import ConnectionBudget
import Logging
import MetricsCollector
import StorecastRuntime
import ZeroMQ

@main
struct MetricsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "storecast-metrics", abstract: "Metrics collector: heartbeats and stats from every process, exposed for Prometheus.")

    @Option(help: "ZeroMQ endpoint processes publish telemetry to (bound here; tcp://*:5603 for every interface).") var subscribeEndpoint = "tcp://127.0.0.1:5603"
    @Option(help: "HTTP address of /metrics (default: this host only; 0.0.0.0 for every interface).") var httpHost = "127.0.0.1"
    @Option(help: "HTTP port for /metrics.") var httpPort = 9100
    @Option(help: "Directory of the cluster's CURVE keys (`storecast keys DIR` writes it; default: $STORECAST_ZMQ_KEYS). Every ZeroMQ socket is authenticated with them.") var zmqKeys: String?
    @Option(help: "Seconds a connection has to send its request headers, and an idle keep-alive connection stays open.") var httpIdleTimeout: Double = 10
    @Option(help: "Open HTTP connections from one IP address (0: no cap).") var httpMaxConnectionsPerIP = HTTPConnectionLimits().maximumConnectionsPerIP
    @Option(help: "Log level.") var logLevel = "info"

    func run() async throws {
        Observability.bootstrap(service: "metrics", logLevel: Logger.Level(rawValue: logLevel) ?? .info)
        let logger = Logger(label: "storecast.metrics")
        var configuration = MetricsCollectorService.Configuration(subscribeEndpoint: subscribeEndpoint, httpHost: httpHost, httpPort: httpPort)
        configuration.httpLimits.idleTimeout = .milliseconds(Int(max(1, httpIdleTimeout) * 1000))
        configuration.httpLimits.maximumConnectionsPerIP = max(0, httpMaxConnectionsPerIP)
        let collector = MetricsCollectorService(configuration: configuration, context: try ClusterKeys.context(option: zmqKeys, role: .metrics, logger: logger), logger: logger)
        try await ServiceRunner.run([collector], logger: logger)
    }
}
