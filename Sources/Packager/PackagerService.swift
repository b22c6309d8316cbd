import Hummingbird
import Logging
import ServiceLifecycle
import ZeroMQ

/// `storecast-packager` as a service: the PULL socket and the HTTP origin.
public final class PackagerService: Service, Sendable {
    public struct Configuration: Sendable {
        public var pullEndpoint: String
        public var httpHost: String
        public var httpPort: Int
        public var targetSegmentDuration: Double
        public var windowSegments: Int
        public var hlsJSURL: String?
        public init(pullEndpoint: String, httpHost: String, httpPort: Int, targetSegmentDuration: Double = 2, windowSegments: Int = 10, hlsJSURL: String? = nil) {
            self.pullEndpoint = pullEndpoint
            self.httpHost = httpHost
            self.httpPort = httpPort
            self.targetSegmentDuration = targetSegmentDuration
            self.windowSegments = windowSegments
            self.hlsJSURL = hlsJSURL
        }
    }

    private let configuration: Configuration
    private let context: ZMQContext
    private let logger: Logger
    public let store = PackageStore()

    public init(configuration: Configuration, context: ZMQContext, logger: Logger) {
        self.configuration = configuration
        self.context = context
        self.logger = logger
    }

    public func run() async throws {
        let (config, context, logger, store) = (configuration, self.context, self.logger, self.store)
        let pipeline = try ZMQActor<Never>(name: "packager", tickInterval: .seconds(1), onError: { error in
            logger.error("packaging error", metadata: ["error": "\(error)"])
        }) {
            try PackagingPipeline(context: context, bindEndpoint: config.pullEndpoint, store: store, targetDuration: config.targetSegmentDuration, windowSegments: config.windowSegments, logger: logger)
        }
        defer { pipeline.stop() }
        let app = Application(
            router: PackagerHTTP.router(store: store, targetDuration: config.targetSegmentDuration, hlsJSURL: config.hlsJSURL),
            configuration: .init(address: .hostname(config.httpHost, port: config.httpPort), serverName: "storecast-packager"),
            logger: logger)
        logger.info("packager ready", metadata: ["pull": "\(config.pullEndpoint)", "http": "\(config.httpHost):\(config.httpPort)"])
        try await app.run()
    }
}
