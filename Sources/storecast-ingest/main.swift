import ArgumentParser
import Ingest
import Logging
import PostgresClient
import StorecastRuntime
import ZeroMQ

@main
struct IngestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "storecast-ingest", abstract: "RTMP ingest: takes publishers in and leases their streams to transcoder workers.")

    @Option(help: "PostgreSQL connection string (libpq conninfo or URL).") var database: String
    @Option(help: "Address to accept RTMP publishers on.") var rtmpHost = "0.0.0.0"
    @Option(help: "RTMP port.") var rtmpPort = 1935
    @Option(help: "ZeroMQ endpoint transcoder workers connect to (bound here; tcp://*:5601 for every interface).") var workEndpoint = "tcp://127.0.0.1:5601"
    @Option(help: "ZeroMQ endpoint of the packager that workers push renditions to.") var packagerEndpoint = "tcp://127.0.0.1:5602"
    @Option(help: "ZeroMQ endpoint of the metrics collector.") var metricsEndpoint = "tcp://127.0.0.1:5603"
    @Option(help: "Seconds a dropped publisher has to reconnect and continue its session.") var reconnectWindow: Double = 10
    @Option(help: "Seconds without media after which a new publish of the same key takes over.") var takeoverIdle: Double = 2
    @Option(help: "Milliseconds between reads of a publishing connection; its bytes wait in the kernel meanwhile, and one wake-up reads every publisher (less CPU for up to this much latency). 0 reads as bytes arrive.") var readPacingMs = ReadPacer.defaultMilliseconds
    @Option(help: "The most slots (1080p30 sources) a transcoder worker is believed to have, whatever it claims (a worker claiming more is capped, and logged).") var maxWorkerSlots = WorkerRegistry.defaultMaximumCapacity
    @Option(help: "Seconds a new RTMP connection has to complete the handshake.") var rtmpHandshakeTimeout: Double = 10
    @Option(help: "Seconds a new RTMP connection has to be authorized to publish.") var rtmpPublishTimeout: Double = 30
    @Option(help: "Bytes a connection may send before it asks to publish.") var rtmpMaxBytesBeforePublish = RTMPConnectionLimits().maximumBytesBeforePublish
    @Option(help: "Open RTMP connections from one IP address (0: no cap).") var rtmpMaxConnectionsPerIP = RTMPConnectionLimits().maximumConnectionsPerIP
    @Option(help: "Seconds a lease ticket (a worker's proof to the packager that it holds a stream) is good for; the holder gets a fresh one every quarter of it.") var leaseTicketValidity: Double = 120
    @Option(help: "Node name in sessions, logs and metrics.") var node: String?
    @Option(help: "Directory of the cluster's CURVE keys (`storecast keys DIR` writes it; default: $STORECAST_ZMQ_KEYS). Every ZeroMQ socket is authenticated with them.") var zmqKeys: String?
    @Option(help: "Log level.") var logLevel = "info"

    func run() async throws {
        Observability.bootstrap(service: "ingest", logLevel: Logger.Level(rawValue: logLevel) ?? .info)
        let logger = Logger(label: "storecast.ingest")
        let nodeID = node ?? NodeIdentity.defaultNodeID(service: "ingest")
        let context = try ClusterKeys.context(option: zmqKeys, role: .ingest, logger: logger)
        let database = PostgresExecutor(conninfo: self.database, name: "ingest-db")
        var serverConfiguration = IngestServer.Configuration(
            rtmpHost: rtmpHost, rtmpPort: rtmpPort, workEndpoint: workEndpoint, packagerEndpoint: packagerEndpoint, nodeID: nodeID,
            liveStreams: .init(reconnectWindow: .milliseconds(Int(reconnectWindow * 1000)), takeoverIdle: .milliseconds(Int(takeoverIdle * 1000))),
            readPacing: .milliseconds(max(0, readPacingMs)))
        serverConfiguration.maximumWorkerSlots = maxWorkerSlots
        serverConfiguration.leaseKey = try ClusterKeys.leaseKey(option: zmqKeys, role: .ingest)
        serverConfiguration.leaseTicketValidity = .milliseconds(Int(min(86_400, max(1, leaseTicketValidity)) * 1000))
        serverConfiguration.connectionLimits.handshakeTimeout = .milliseconds(Int(max(0.1, rtmpHandshakeTimeout) * 1000))
        serverConfiguration.connectionLimits.publishTimeout = .milliseconds(Int(max(0.1, rtmpPublishTimeout) * 1000))
        serverConfiguration.connectionLimits.maximumBytesBeforePublish = max(4096, rtmpMaxBytesBeforePublish)
        serverConfiguration.connectionLimits.maximumConnectionsPerIP = max(0, rtmpMaxConnectionsPerIP)
        let server = IngestServer(
            configuration: serverConfiguration,
            catalog: StreamCatalog(database: database), context: context, logger: logger)
        let telemetry = TelemetryReporter(collectorEndpoint: metricsEndpoint, service: "ingest", node: nodeID, context: context, logger: logger)
        try await ServiceRunner.run([server, telemetry], logger: logger)
        database.shutdown()
    }
}
