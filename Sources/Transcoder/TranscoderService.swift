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
        /// How long SIGTERM waits for ingest to move this worker's streams before exiting.
        public var drainTimeout: Duration
        public init(workerID: String, capacity: UInt16, ingestEndpoints: [String], settings: TranscoderSettings, drainTimeout: Duration = .seconds(10)) {
            self.drainTimeout = drainTimeout
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
        let active = ActiveStreamCount()
        let actor = try ZMQActor<WorkerCommand>(name: "transcoder-worker", tickInterval: .seconds(1), onError: { error in
            logger.error("worker error", metadata: ["error": "\(error)"])
        }) {
            try TranscoderWorker(context: context, workerID: config.workerID, capacity: config.capacity, ingestEndpoints: config.ingestEndpoints, settings: config.settings, activeStreams: active, logger: logger) { command in
                holder.actor.withLock { $0 }?.send(command)
            }
        }
        holder.actor.withLock { $0 = actor }
        logger.info("transcoder worker ready", metadata: ["worker": "\(config.workerID)", "capacity": "\(config.capacity)", "ingest": "\(config.ingestEndpoints)"])
        try? await gracefulShutdown()
        // Drain: report capacity 0, so ingest moves each stream at its next keyframe, and wait
        // until none is left (or the drain timeout passes: ingest then fails them over).
        let started = ContinuousClock.now
        logger.info("draining: refusing new streams and handing running ones over", metadata: ["streams": "\(active.value.load(ordering: .acquiring))", "timeout": "\(config.drainTimeout)"])
        actor.send(.drain)
        var lastReport = started
        while active.value.load(ordering: .acquiring) > 0, ContinuousClock.now - started < config.drainTimeout {
            try? await Task.sleep(for: .milliseconds(50))
            if ContinuousClock.now - lastReport >= .seconds(1) {
                lastReport = ContinuousClock.now
                logger.info("draining: waiting for streams to move", metadata: ["streams": "\(active.value.load(ordering: .acquiring))"])
            }
        }
        let left = active.value.load(ordering: .acquiring)
        if left > 0 {
            logger.warning("drain timeout: streams still here will fail over when ingest notices", metadata: ["streams": "\(left)"])
        } else {
            logger.info("drained", metadata: ["after": "\(ContinuousClock.now - started)"])
        }
        // Let the released jobs flush their last frames to the packager before the sockets close.
        try? await Task.sleep(for: .milliseconds(300))
        actor.stop()
    }
}

final class ActorHolder: Sendable {
    let actor = Mutex<ZMQActor<WorkerCommand>?>(nil)
}
