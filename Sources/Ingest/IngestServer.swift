import ConnectionBudget
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import StorecastRuntime
import Synchronization
import ZeroMQ

/// `storecast-ingest` as a service: the RTMP listener and the dispatcher, on one event loop.
public final class IngestServer: Service, Sendable {
    public struct Configuration: Sendable {
        public var rtmpHost: String
        public var rtmpPort: Int
        /// Where transcoder workers connect (ROUTER bind).
        public var workEndpoint: String
        /// Where workers push renditions when no packager is registered in PostgreSQL (otherwise
        /// each stream goes to its rendezvous owner among the live packagers).
        public var packagerEndpoint: String
        public var nodeID: String
        public var liveStreams: LiveStreamTable.Configuration
        /// How often a publishing connection reads its socket (``ReadPacer``); zero reads as
        /// bytes arrive (lowest latency, most CPU).
        public var readPacing: Duration
        /// The most streams one transcoder worker is leased at once, whatever it claims.
        public var maximumWorkerSlots = WorkerRegistry.defaultMaximumCapacity
        /// Signs the lease ticket of every assign (``WorkDispatcher``); packagers require it.
        public var leaseKey: LeaseTicketKey?
        /// How long each lease ticket is good for; holders get a fresh one every quarter of it.
        public var leaseTicketValidity: Duration = LeaseTicketKey.defaultValidity
        /// Deadlines and budgets of a connection until it publishes, and the per-IP cap.
        public var connectionLimits = RTMPConnectionLimits()

        public init(rtmpHost: String, rtmpPort: Int, workEndpoint: String, packagerEndpoint: String, nodeID: String, liveStreams: LiveStreamTable.Configuration = .init(), readPacing: Duration = ReadPacer.defaultInterval) {
            self.liveStreams = liveStreams
            self.readPacing = readPacing
            self.rtmpHost = rtmpHost
            self.rtmpPort = rtmpPort
            self.workEndpoint = workEndpoint
            self.packagerEndpoint = packagerEndpoint
            self.nodeID = nodeID
        }
    }

    private let configuration: Configuration
    private let catalog: StreamCatalog
    private let ledger: LeaseLedger
    private let writes: DatabaseWriteBehind
    private let context: ZMQContext
    private let logger: Logger

    public init(configuration: Configuration, catalog: StreamCatalog, context: ZMQContext, logger: Logger) {
        self.configuration = configuration
        self.catalog = catalog
        self.writes = DatabaseWriteBehind(database: catalog.database, logger: logger)
        self.ledger = LeaseLedger(writes: writes, ingestNode: configuration.nodeID)
        self.context = context
        self.logger = logger
    }

    public func run() async throws {
        let (config, context, logger, ledger) = (configuration, self.context, self.logger, self.ledger)
        let packagers = PackagerDirectory(writes: writes, fallbackEndpoint: config.packagerEndpoint, logger: logger)
        do {
            let closed = try await ledger.closeLeftovers()
            if closed > 0 { logger.info("ended transcoder leases left open by this node's previous run", metadata: ["leases": "\(closed)"]) }
        } catch {
            logger.warning("could not tidy transcoder leases; continuing", metadata: ["error": "\(error)"])
        }
        // One loop carries every connection and the dispatcher: a frame read there goes to
        // ZeroMQ in the same iteration, without waking another thread.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let pacer = config.readPacing > .zero ? ReadPacer(eventLoop: loop, interval: config.readPacing) : nil
        let dispatcher: EventLoopZMQActor<WorkDispatcher>
        do {
            // Workers only send READY and a heartbeat a second, and the socket is also read after
            // every batch of media: checking it with the 250 ms tick is enough, and an idle
            // ingest wakes 4 times a second for it instead of 20.
            dispatcher = try await EventLoopZMQActor(on: loop, tickInterval: .milliseconds(250), pollInterval: .milliseconds(250), onError: { error in
                logger.error("dispatcher error", metadata: ["error": "\(error)"])
            }) {
                try WorkDispatcher(context: context, bindEndpoint: config.workEndpoint, nodeID: config.nodeID, packagers: packagers, ledger: ledger, leaseKey: config.leaseKey, ticketValidity: config.leaseTicketValidity, maximumWorkerCapacity: config.maximumWorkerSlots, logger: logger)
            }
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
        // The dispatcher's socket closes on the loop, before the loop goes, also after an error.
        var failure: (any Error)?
        do { try await serve(on: group, dispatcher: dispatcher, pacer: pacer, packagers: packagers) } catch { failure = error }
        await dispatcher.stop()
        try? await group.shutdownGracefully()
        if let failure { throw failure }
    }

    private func serve(on group: MultiThreadedEventLoopGroup, dispatcher: EventLoopZMQActor<WorkDispatcher>, pacer: ReadPacer?, packagers: PackagerDirectory) async throws {
        let (config, logger) = (configuration, self.logger)
        await packagers.refresh()
        let refresher = Task { await packagers.run() }
        defer { refresher.cancel() }
        let gate = PublishGate(catalog: catalog, writes: writes, dispatcher: dispatcher, nodeID: config.nodeID, table: config.liveStreams, logger: logger)
        let connections = ConnectionSet()
        let perIP = PerIPConnectionCap(maximumPerIP: config.connectionLimits.maximumConnectionsPerIP, listener: "rtmp", logger: logger)
        let server = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                connections.insert(channel)
                channel.closeFuture.whenComplete { _ in connections.remove(channel) }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandlers(perIP.makeHandler(), PacedReadHandler(pacer: pacer), RTMPConnectionHandler(gate: gate, limits: config.connectionLimits, logger: logger))
                }
            }
            .bind(host: config.rtmpHost, port: config.rtmpPort).get()
        logger.info("RTMP ingest listening", metadata: ["address": "\(server.localAddress.map { "\($0)" } ?? "?")", "work_endpoint": "\(config.workEndpoint)", "read_pacing": "\(config.readPacing)"])
        // Graceful shutdown (SIGTERM) and cancellation (another service failed) both close.
        await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                try? await server.closeFuture.get()
            } onGracefulShutdown: {
                logger.info("shutting down: closing the listener and publisher connections")
                server.close(promise: nil)
                connections.closeAll()
            }
        } onCancel: {
            server.close(promise: nil)
            connections.closeAll()
        }
        // Publishers are gone for good now: end the sessions waiting to reconnect, and write the
        // session rows (up to 5 s, also while PostgreSQL is away) before the loop goes away.
        try? await Task.sleep(for: .milliseconds(100))
        gate.endAll()
        try? await Task.sleep(for: .milliseconds(100))
        await writes.flush(timeout: .seconds(5))
    }
}

/// Open publisher connections, so shutdown can close them and end their sessions cleanly.
final class ConnectionSet: Sendable {
    private let channels = Mutex<[ObjectIdentifier: any Channel]>([:])

    func insert(_ channel: any Channel) { channels.withLock { $0[ObjectIdentifier(channel)] = channel } }
    func remove(_ channel: any Channel) { _ = channels.withLock { $0.removeValue(forKey: ObjectIdentifier(channel)) } }
    func closeAll() {
        for channel in channels.withLock({ Array($0.values) }) { channel.close(promise: nil) }
    }
}
