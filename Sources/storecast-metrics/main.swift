import ArgumentParser
import Logging
import MetricsCollector
import StorecastRuntime
import ZeroMQ

@main
struct MetricsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "storecast-metrics", abstract: "Metrics collector: heartbeats and stats from every process, exposed for Prometheus.")

    @Option(help: "ZeroMQ endpoint processes publish telemetry to (bound here).") var subscribeEndpoint = "tcp://*:5603"
    @Option(help: "HTTP address.") var httpHost = "0.0.0.0"
    @Option(help: "HTTP port for /metrics.") var httpPort = 9100
    @Option(help: "Log level.") var logLevel = "info"

    func run() async throws {
        Observability.bootstrap(service: "metrics", logLevel: Logger.Level(rawValue: logLevel) ?? .info)
        let logger = Logger(label: "storecast.metrics")
        let collector = MetricsCollectorService(configuration: .init(subscribeEndpoint: subscribeEndpoint, httpHost: httpHost, httpPort: httpPort), context: try ZMQContext(), logger: logger)
        try await ServiceRunner.run([collector], logger: logger)
    }
}
