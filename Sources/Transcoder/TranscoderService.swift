import FFmpegCodecs
import Logging
import ServiceLifecycle
import Synchronization
import ZeroMQ

/// `storecast-transcoder` as a service.
public final class TranscoderService: Service, Sendable {
    public struct Configuration: Sendable {
        public var workerID: String
        public var capacity: UInt16
        public var ingestEndpoints: [String]
        public var settings: TranscoderSettings
        public init(workerID: String, capacity: UInt16, ingestEndpoints: [String], settings: TranscoderSettings) {
            self.workerID = workerID
            self.capacity = capacity
            self.ingestEndpoints = ingestEndpoints
            self.settings = settings
        }
    }

    private let configuration: Configuration
    private let context: ZMQContext
    private let logger: Logger

    public init(configuration: Configuration, context: ZMQContext, logger: Logger) {
        self.configuration = configuration
        self.context = context
        self.logger = logger
    }

    public func run() async throws {
        let (config, context, logger) = (configuration, self.context, self.logger)
        FFmpegLogging.quiet()
        let holder = ActorHolder()
        let actor = try ZMQActor<WorkerCommand>(name: "transcoder-worker", tickInterval: .seconds(1), onError: { error in
            logger.error("worker error", metadata: ["error": "\(error)"])
        }) {
            try TranscoderWorker(context: context, workerID: config.workerID, capacity: config.capacity, ingestEndpoints: config.ingestEndpoints, settings: config.settings, logger: logger) { command in
                holder.actor.withLock { $0 }?.send(command)
            }
        }
        holder.actor.withLock { $0 = actor }
        logger.info("transcoder worker ready", metadata: ["worker": "\(config.workerID)", "capacity": "\(config.capacity)", "ingest": "\(config.ingestEndpoints)"])
        try? await gracefulShutdown()
        logger.info("draining: refusing new streams")
        actor.send(.drain)
        try? await Task.sleep(for: .milliseconds(200))
        actor.stop()
    }
}

final class ActorHolder: Sendable {
    let actor = Mutex<ZMQActor<WorkerCommand>?>(nil)
}
