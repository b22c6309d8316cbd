import ArgumentParser
import Logging
import Packager
import StorecastRuntime
import ZeroMQ

@main
struct PackagerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "storecast-packager", abstract: "Packager: CMAF segments and HLS playlists, served over HTTP.")

    @Option(help: "ZeroMQ endpoint transcoders push renditions to (bound here).") var pullEndpoint = "tcp://*:5602"
    @Option(help: "ZeroMQ endpoint of the metrics collector.") var metricsEndpoint = "tcp://127.0.0.1:5603"
    @Option(help: "HTTP address.") var httpHost = "0.0.0.0"
    @Option(help: "HTTP port.") var httpPort = 8080
    @Option(help: "Target segment duration in seconds.") var segmentDuration: Double = 2
    @Option(help: "Segments kept in each live playlist.") var window = 10
    @Option(help: "URL of hls.js for browsers without native HLS (optional).") var hlsjsURL: String?
    @Option(help: "Node name.") var node: String?
    @Option(help: "Log level.") var logLevel = "info"

    func run() async throws {
        Observability.bootstrap(service: "packager", logLevel: Logger.Level(rawValue: logLevel) ?? .info)
        let logger = Logger(label: "storecast.packager")
        let nodeID = node ?? NodeIdentity.defaultNodeID(service: "packager")
        let context = try ZMQContext()
        let packager = PackagerService(
            configuration: .init(pullEndpoint: pullEndpoint, httpHost: httpHost, httpPort: httpPort, targetSegmentDuration: segmentDuration, windowSegments: window, hlsJSURL: hlsjsURL),
            context: context, logger: logger)
        let telemetry = TelemetryReporter(collectorEndpoint: metricsEndpoint, service: "packager", node: nodeID, context: context, logger: logger)
        try await ServiceRunner.run([packager, telemetry], logger: logger)
    }
}
