import Foundation
import Logging
import Prometheus
import ServiceLifecycle
import StorecastWire
import ZeroMQ

/// Sends this process's heartbeat, with its swift-metrics state as Prometheus text, to the
/// metrics collector every second (PUB connects to the collector's bound SUB).
public final class TelemetryReporter: Service, Sendable {
    private let collectorEndpoint: String
    private let service: String
    private let node: String
    private let registry: PrometheusCollectorRegistry
    private let context: ZMQContext
    private let logger: Logger

    public init(collectorEndpoint: String, service: String, node: String, context: ZMQContext, registry: PrometheusCollectorRegistry = Observability.registry, logger: Logger) {
        self.collectorEndpoint = collectorEndpoint
        self.service = service
        self.node = node
        self.registry = registry
        self.context = context
        self.logger = logger
    }

    private final class Body: ZMQActorBody {
        typealias Command = Never
        let socket: ZMQSocket
        let make: () -> WireMessage
        var readableSockets: [ZMQSocket] { [] }

        init(socket: ZMQSocket, make: @escaping () -> WireMessage) {
            self.socket = socket
            self.make = make
        }

        func socketReadable(_ socket: ZMQSocket) throws {}
        func handle(_ command: Never) throws {}
        func tick(now: ContinuousClock.Instant) throws {
            // A collector that is down must not block us: drop the beat at the high-water mark.
            _ = try socket.send([WireTopic.telemetry, WireCodec.encode(make())], dontWait: true)
        }
    }

    public func run() async throws {
        let started = Date()
        let (service, node, registry, endpoint, context) = (self.service, self.node, self.registry, collectorEndpoint, self.context)
        let logger = self.logger
        let actor = try ZMQActor<Never>(name: "telemetry", tickInterval: .seconds(1), onError: { error in
            logger.debug("telemetry send failed", metadata: ["error": "\(error)"])
        }) {
            let socket = try ZMQSocket(context: context, type: .pub, maximumMessageSize: WireCodec.maximumControlMessage)
            try socket.setSendHighWaterMark(10)
            // While the collector is down, retry with backoff up to 5 s instead of every 100 ms
            // (libzmq's default, which kept every service's I/O thread busy reconnecting).
            try socket.setReconnectInterval(milliseconds: 100, max: 5_000)
            try socket.connect(endpoint, server: ClusterKeys.Role.metrics.rawValue)
            return Body(socket: socket) {
                .telemetry(Telemetry(
                    service: service, node: node, pid: UInt32(ProcessInfo.processInfo.processIdentifier),
                    uptimeSeconds: UInt32(max(0, Date().timeIntervalSince(started))),
                    exposition: registry.emitToString()))
            }
        }
        logger.info("telemetry reporting", metadata: ["collector": "\(endpoint)"])
        try? await gracefulShutdown()
        actor.stop()
    }
}
