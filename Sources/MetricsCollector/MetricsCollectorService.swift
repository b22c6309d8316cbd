import ConnectionBudget
import Hummingbird
import HTTPTypes
import Logging
import Metrics
import Prometheus
import ServiceLifecycle
import StorecastRuntime
import StorecastWire
import ZeroMQ

/// `storecast-metrics`: binds the telemetry SUB socket that every process's PUB connects to, and
/// serves the merged view at `/metrics` for Prometheus.
public final class MetricsCollectorService: Service, Sendable {
    public struct Configuration: Sendable {
        public var subscribeEndpoint: String
        public var httpHost: String
        public var httpPort: Int
        public var httpLimits = HTTPConnectionLimits()
        public init(subscribeEndpoint: String, httpHost: String, httpPort: Int) {
            self.subscribeEndpoint = subscribeEndpoint
            self.httpHost = httpHost
            self.httpPort = httpPort
        }
    }

    private final class Receiver: ZMQActorBody {
        typealias Command = Never
        let socket: ZMQSocket
        let board: TelemetryBoard
        let logger: Logger
        let received = Counter(label: "storecast_metrics_heartbeats_total")
        let refused = Counter(label: "storecast_metrics_heartbeats_refused_total")
        /// Refusals so far: the first and every 100th are logged (a flood must not flood the log).
        var refusals = 0
        var readableSockets: [ZMQSocket] { [socket] }

        init(socket: ZMQSocket, board: TelemetryBoard, logger: Logger) {
            self.socket = socket
            self.board = board
            self.logger = logger
        }

        func socketReadable(_ socket: ZMQSocket) throws {
            guard let frames = try socket.receive(dontWait: true), frames.count == 2 else { return }
            do {
                guard case .telemetry(let t) = try WireCodec.decode(frames[1]) else { return }
                switch board.record(t, at: .now) {
                case .recorded: received.increment()
                case .full:
                    refused.increment()
                    refusals += 1
                    if refusals % 100 == 1 { logger.warning("telemetry from a new process refused: the collector reports \(board.maximumNodes) processes already", metadata: ["service": "\(t.service.prefix(64))", "node": "\(t.node.prefix(64))", "refused_so_far": "\(refusals)"]) }
                case .badName:
                    refused.increment()
                    refusals += 1
                    if refusals % 100 == 1 { logger.warning("telemetry refused: service or node name empty or over \(TelemetryBoard.maximumNameLength) bytes", metadata: ["refused_so_far": "\(refusals)"]) }
                }
            } catch {
                logger.warning("undecodable telemetry", metadata: ["error": "\(error)"])
            }
        }
        func handle(_ command: Never) throws {}
        func tick(now: ContinuousClock.Instant) throws {}
    }

    private let configuration: Configuration
    private let context: ZMQContext
    private let logger: Logger
    public let board = TelemetryBoard()

    public init(configuration: Configuration, context: ZMQContext, logger: Logger) {
        self.configuration = configuration
        self.context = context
        self.logger = logger
    }

    public func run() async throws {
        let (config, context, logger, board) = (configuration, self.context, self.logger, self.board)
        let receiver = try ZMQActor<Never>(name: "metrics-sub", onError: { error in
            logger.error("telemetry receive error", metadata: ["error": "\(error)"])
        }) {
            let socket = try ZMQSocket(context: context, type: .sub, maximumMessageSize: WireCodec.maximumTelemetryMessage)
            try socket.subscribe(WireTopic.telemetry)
            try socket.bind(config.subscribeEndpoint)
            return Receiver(socket: socket, board: board, logger: logger)
        }
        defer { receiver.stop() }
        let router = Router()
        router.get("/healthz") { _, _ in "ok" }
        router.get("/metrics") { _, _ -> Response in
            let text = board.exposition(now: .now, own: Observability.registry.emitToString())
            var headers = HTTPFields()
            headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
        }
        let app = Application(router: router, server: .guardedHTTP1(limits: config.httpLimits, listener: "metrics-http", logger: logger), configuration: .guarded(host: config.httpHost, port: config.httpPort, serverName: "storecast-metrics", limits: config.httpLimits),
                              onServerRunning: config.httpLimits.onServerRunning, logger: logger)
        logger.info("metrics collector ready", metadata: ["sub": "\(config.subscribeEndpoint)", "http": "\(config.httpHost):\(config.httpPort)"])
        try await app.run()
    }
}
