import ArgumentParser
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
    @Option(help: "HTTP address.") var httpHost = "0.0.0.0"
    @Option(help: "HTTP port.") var httpPort = 8088
    @Option(help: "Operator bearer token (or STORECAST_ADMIN_TOKEN); without one the API is open, for local use only.") var adminToken: String?
    @Option(help: "Public RTMP base URL written into publish URLs.") var rtmpBaseURL = "rtmp://127.0.0.1:1935"
    @Option(help: "Public packager base URL written into playback URLs.") var playbackBaseURL = "http://127.0.0.1:8080"
    @Option(help: "ZeroMQ endpoint of the metrics collector.") var metricsEndpoint = "tcp://127.0.0.1:5603"
    @Option(help: "Log level.") var logLevel = "info"

    func run() async throws {
        Observability.bootstrap(service: "api", logLevel: Logger.Level(rawValue: logLevel) ?? .info)
        let logger = Logger(label: "storecast.api")
        let database = PostgresExecutor(conninfo: self.database, name: "api-db")
        let token = adminToken ?? ProcessInfo.processInfo.environment["STORECAST_ADMIN_TOKEN"]
        if token == nil { logger.warning("no admin token set: the control API accepts every caller; set --admin-token in production") }
        let app = Application(
            router: ControlAPI.router(catalog: StreamCatalog(database: database), adminToken: token, rtmpBaseURL: rtmpBaseURL, playbackBaseURL: playbackBaseURL),
            configuration: .init(address: .hostname(httpHost, port: httpPort), serverName: "storecast-api"), logger: logger)
        let telemetry = TelemetryReporter(collectorEndpoint: metricsEndpoint, service: "api", node: NodeIdentity.defaultNodeID(service: "api"), context: try ZMQContext(), logger: logger)
        try await ServiceRunner.run([app, telemetry], logger: logger)
        database.shutdown()
    }
}
