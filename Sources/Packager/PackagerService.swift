import Foundation
import ConnectionBudget
import Hummingbird
import Logging
import Metrics
import NIOCore
import PostgresClient
import StorecastRuntime
import ServiceLifecycle
import Synchronization
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
        /// hls.js served by the origin itself at /assets/hls.js.
        public var hlsJS: [UInt8]?
        /// Seconds of DVR window listed in media playlists (0: only the in-memory live window);
        /// media older than the live window is served from `dvrDirectory`.
        public var dvrWindow: Double = 0
        public var dvrDirectory = "dvr"
        /// How long an ended stream stays servable before it leaves memory (and its DVR files go).
        public var endedRetention: Duration = .seconds(120)
        /// Where recordings are written (needs the database).
        public var recordingsDirectory = "recordings"
        public var node = "packager"
        /// What this packager registers in PostgreSQL for sharding: the ZeroMQ endpoint
        /// transcoders push to, and the base URL players use.
        public var advertisedEndpoint: String?
        public var publicURL: String?
        /// The player page's choice where the browser has both.
        public var preferredPlayer = PlayerPreference.auto
        /// The control API's base URL as players reach it, for the page's stream events.
        public var eventsBaseURL: String?
        /// LL-HLS part target in seconds; nil serves plain HLS.
        public var partTarget: Double?
        /// Parts are written as CMAF chunks of about this many seconds, streamed to players
        /// blocked on the preload hint; 0 writes each part as one chunk.
        public var chunkTarget: Double = 0.1
        /// Deadlines and caps of every HTTP connection (players, CDN, probes).
        public var httpLimits = HTTPConnectionLimits()
        /// Checks the lease tickets in workers' announces (``MediaAdmission``); nil takes media
        /// from every authenticated worker.
        public var leaseKey: LeaseTicketKey?
        /// A live stream that gets no media for this long is ended here (ENDLIST).
        public var idleEnd: Duration = .seconds(30)
        /// How long after its expiry a lease ticket is still taken (this node's clock ahead of ingest's).
        public var leaseClockSkew: Duration = LeaseTicketKey.defaultClockSkewAllowance
        /// Proxy addresses (CDN edges, load balancers) whose X-Forwarded-For is believed.
        public var trustedProxies: Set<String> = []
        /// HTTP/2 (and HTTP/1.1) over TLS on a port of its own, beside plain HTTP/1.1 on
        /// `httpPort`; nil: none.
        public var secureListener: SecureListener?
        public init(pullEndpoint: String, httpHost: String, httpPort: Int, targetSegmentDuration: Double = 2, windowSegments: Int = 10, hlsJSURL: String? = nil, hlsJS: [UInt8]? = nil, partTarget: Double? = 0.2) {
            self.hlsJS = hlsJS
            self.partTarget = partTarget
            self.pullEndpoint = pullEndpoint
            self.httpHost = httpHost
            self.httpPort = httpPort
            self.targetSegmentDuration = targetSegmentDuration
            self.windowSegments = windowSegments
            self.hlsJSURL = hlsJSURL
        }
    }

    /// Where the origin serves HTTP/2 over TLS, and with which certificate.
    public struct SecureListener: Sendable {
        public var port: Int
        public var tls: TLSFiles
        public init(port: Int, tls: TLSFiles) {
            self.port = port
            self.tls = tls
        }
    }

    private let configuration: Configuration
    private let context: ZMQContext
    private let logger: Logger
    public let store = PackageStore()
    public let viewers = ViewerAccounting()

    private let database: PostgresExecutor?

    /// Without a database every stream plays without a token (development).
    public init(configuration: Configuration, context: ZMQContext, database: PostgresExecutor? = nil, logger: Logger) {
        self.configuration = configuration
        self.database = database
        self.context = context
        self.logger = logger
    }

    public func run() async throws {
        let (config, context, logger, store, viewers, database) = (configuration, self.context, self.logger, self.store, self.viewers, self.database)
        // The certificate and key first: a wrong one stops the start with what to fix.
        let tls = try config.secureListener.map { try $0.tls.serverConfiguration() }
        // Facts about live streams that nothing waits for (cursors, recordings' outcomes): retried
        // while the database is away.
        let writes = database.map { DatabaseWriteBehind(database: $0, logger: logger) }
        // Each tenant's recordings and DVR files against its storage quota (read from the database).
        let storage = database.map { _ in TenantStorage(logger: logger) }
        let recorder = writes.map { Recorder(writes: $0, root: config.recordingsDirectory, node: config.node, storage: storage!, logger: logger) }
        let dvr = config.dvrWindow > 0 ? DVRArchive(root: config.dvrDirectory, logger: logger, storage: storage) : nil
        let quotas = Task { if let storage, let database { await storage.refresh(from: database, node: config.node) } }
        defer { quotas.cancel() }
        // Packages this node served before a restart (kill -9, a deploy): continued when their
        // streams come back, so players' media playlist URLs stay valid.
        var resume: [PackageCursor] = []
        if let database {
            // Waited on for 3 s at most: an unreachable database must not hold the origin's start.
            let node = config.node
            let read: [PackageCursor]?? = await withCheckedContinuation { continuation in
                let first = FirstAnswer()
                Task {
                    let cursors = try? await database.run { try PackageCursorStore.recent($0, node: node, within: Int(PackageResumption.claimWithinSeconds)) }
                    if first.claim() { continuation.resume(returning: .some(cursors)) }
                }
                Task {
                    try? await Task.sleep(for: .seconds(3))
                    if first.claim() { continuation.resume(returning: .none) }
                }
            }
            switch read {
            case .some(.some(let cursors)):
                resume = cursors
                if !resume.isEmpty { logger.info("packages to continue after a restart", metadata: ["streams": "\(Set(resume.map(\.streamKey)).sorted())"]) }
            case .some(.none):
                logger.warning("cannot read the packages served before a restart; their viewers must reload master.m3u8")
            case .none:
                logger.warning("the database did not answer within 3 s; packages served before a restart are not continued (their viewers must reload master.m3u8)")
            }
        }
        let served = resume
        var saveCursors: (@Sendable ([PackageCursor]) -> Void)?
        var dropCursors: (@Sendable (String) -> Void)?
        var onLive: (@Sendable (Int64, Int64) -> Void)?
        var onHealth: (@Sendable (StreamHealth.Report) -> Void)?
        var onRenditions: (@Sendable (Int64, Int64, [StreamLiveStatus.Rendition]) -> Void)?
        if let writes {
            let node = config.node
            // Rewritten every second: only the latest matters while the database is away.
            saveCursors = { cursors in writes.record("package cursors", key: "cursors") { try PackageCursorStore.save($0, node: node, cursors) } }
            dropCursors = { key in writes.record("package cursors drop") { try PackageCursorStore.delete($0, node: node, streamKey: key) } }
            // stream.live for webhooks: once per session, whichever packager or restart sees it first.
            onLive = { streamID, sessionID in
                writes.record("stream.live event") {
                    try WebhookOutbox.streamEvent($0, "stream.live", streamID: streamID, sessionID: sessionID, once: "stream.live \(sessionID)")
                }
            }
            // Health, with stream.health_changed, and renditions: the stream's live status.
            onHealth = { report in
                writes.record("stream health") {
                    try StreamLiveStatus.setHealth($0, streamID: report.streamID, sessionID: report.sessionID, health: report.state.rawValue, reasons: report.reasons)
                }
            }
            onRenditions = { streamID, sessionID, renditions in
                writes.record("stream renditions", key: "renditions \(streamID)") { try StreamLiveStatus.setRenditions($0, streamID: streamID, sessionID: sessionID, renditions) }
            }
        }
        let writeCursors = saveCursors
        let forgetCursors = dropCursors
        let reportLive = onLive
        let reportHealth = onHealth
        let reportRenditions = onRenditions
        let pipeline = try ZMQActor<Never>(name: "packager", tickInterval: .seconds(1), onError: { error in
            logger.error("packaging error", metadata: ["error": "\(error)"])
        }) {
            try PackagingPipeline(context: context, bindEndpoint: config.pullEndpoint, store: store, targetDuration: config.targetSegmentDuration, partTarget: config.partTarget ?? 3600, chunkTarget: config.partTarget == nil ? 0 : config.chunkTarget, windowSegments: config.windowSegments, recorder: recorder, dvr: dvr, dvrWindow: config.dvrWindow, endedRetention: config.endedRetention,
                                  resume: served, saveCursors: writeCursors, forgetCursors: forgetCursors, onLive: reportLive, leaseKey: config.leaseKey, leaseClockSkew: config.leaseClockSkew,
                                  idleEnd: config.idleEnd, onHealth: reportHealth, onRenditions: reportRenditions, logger: logger)
        }
        defer { pipeline.stop() }
        var origin = OriginSettings(targetDuration: config.targetSegmentDuration, lowLatency: config.partTarget.map(LowLatencySettings.init(partTarget:)), hlsJSURL: config.hlsJSURL, hlsJS: config.hlsJS, dvr: dvr)
        origin.preferredPlayer = config.preferredPlayer
        origin.eventsBaseURL = config.eventsBaseURL
        origin.trustedProxies = config.trustedProxies
        let gate = PlaybackGate(store: database.map(PlaybackAccessStore.init(database:)))
        let fastPath = MediaFastPath.Origin(store: store, gate: gate, viewers: viewers, trustedProxies: config.trustedProxies, serverName: "storecast-packager")
        let hotPath: @Sendable () -> any ChannelHandler = { MediaFastPath(origin: fastPath) }
        let unchanging = MediaAnswer.unchangingLines(serverName: fastPath.serverName)
        let frameFields = HTTP2MediaFrames.Fields(serverName: fastPath.serverName), stallDeadline = config.httpLimits.idleTimeAmount
        let frames: @Sendable () -> any ChannelHandler = { HTTP2MediaFrames(origin: fastPath, fields: frameFields, stallDeadline: stallDeadline) }
        let limits = config.httpLimits
        let onTheWire: @Sendable (ConnectionActivity) -> any ChannelHandler = { activity in
            HTTP1MediaFastPath(origin: fastPath, activity: activity, unchanging: unchanging, maximumHeadBytes: limits.maximumHeaderBytes, maximumFields: limits.maximumHeaderFields)
        }
        let app = Application(
            router: PackagerHTTP.router(store: store, settings: origin, gate: gate, viewers: viewers),
            // Media already in memory is answered below the router: on the wire (HTTP1MediaFastPath),
            // and, for requests handed on, in front of it (MediaFastPath).
            server: .guardedHTTP1(limits: config.httpLimits, listener: "packager-http", logger: logger, inFrontOfRouter: hotPath, onTheWire: onTheWire),
            configuration: .guarded(host: config.httpHost, port: config.httpPort, serverName: "storecast-packager", limits: config.httpLimits),
            onServerRunning: config.httpLimits.onServerRunning,
            logger: logger)
        // The same origin over TLS, HTTP/2 where the client offers it (browsers do); over HTTP/2
        // media in memory is answered as frames on the connection (HTTP2MediaFrames).
        let secureApp = config.secureListener.flatMap { listener in
            tls.map { tls in
                Application(
                    router: PackagerHTTP.router(store: store, settings: origin, gate: gate, viewers: viewers),
                    server: .guardedHTTP2(tls: tls, limits: config.httpLimits, listener: "packager-https", logger: logger, frameHandler: frames),
                    configuration: .guarded(host: config.httpHost, port: listener.port, serverName: "storecast-packager", limits: config.httpLimits),
                    onServerRunning: config.httpLimits.onServerRunning,
                    logger: logger)
            }
        }
        logger.info("packager ready", metadata: ["pull": "\(config.pullEndpoint)", "http": "\(config.httpHost):\(config.httpPort)",
                                                 "https": "\(config.secureListener.map { "\(config.httpHost):\($0.port) (HTTP/2 and HTTP/1.1)" } ?? "off")"])
        // Registered as a live packager (heartbeat every 2 s): ingest shards streams over these.
        let registration = Task { [logger] in
            guard let database, let endpoint = config.advertisedEndpoint else { return }
            let me = NodeRegistry.Node(id: config.node, service: "packager", endpoint: endpoint, publicURL: config.publicURL)
            var registered = false
            while !Task.isCancelled {
                do {
                    try await database.run { try NodeRegistry.heartbeat($0, me) }
                    if !registered { logger.info("registered as a live packager", metadata: ["endpoint": "\(endpoint)", "public_url": "\(config.publicURL ?? "-")"]) }
                    registered = true
                } catch {
                    logger.warning("packager heartbeat failed; ingest stops sending new streams here after \(NodeRegistry.liveSeconds) s", metadata: ["error": "\(error)"])
                }
                try? await Task.sleep(for: .seconds(2))
            }
        }
        defer { registration.cancel() }
        // Viewer gauges every 5 s, for as long as the origin serves.
        let reporter = Task { [viewers, writes, store] in
            var placeholders: [String: [UInt8]] = [:]
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(5))
                let counts = viewers.report()
                // And in each stream's live status (only the latest matters while the database is away).
                if !counts.isEmpty { writes?.record("stream viewers", key: "viewers") { try StreamLiveStatus.setViewers($0, counts) } }
                // Each live stream's newest placeholder, for the stories feed's first paint.
                for key in store.keys() {
                    guard let package = store.package(key), !package.ended, let tiny = package.thumbnail?.placeholder, !tiny.isEmpty,
                          placeholders[key] != tiny else { continue }
                    placeholders[key] = tiny
                    let dataURL = "data:image/jpeg;base64," + Data(tiny).base64EncodedString()
                    let (tenant, stream) = (package.tenant, package.name)
                    writes?.record("stream placeholder", key: "placeholder \(key)") { try StoriesFeed.setPlaceholder($0, tenant: tenant, stream: stream, dataURL: dataURL) }
                }
                placeholders = placeholders.filter { store.package($0.key) != nil }
            }
        }
        defer { reporter.cancel() }
        // Files of recordings a tenant deleted (the rows are gone already), every 5 s.
        let janitor = Task { [logger] in
            guard let recorder, let database else { return }
            while !Task.isCancelled {
                do {
                    let pending = try await database.run { try RecordingDeletion.pending($0, node: config.node) }
                    let removed = await recorder.removeDeleted(pending)
                    let failed = pending.map(\.recordingID).filter { !removed.contains($0) }
                    try await database.run { try RecordingDeletion.done($0, removed: removed, failed: failed) }
                } catch {
                    logger.warning("cannot read the recordings to remove; retried in 5 s", metadata: ["error": "\(error)"])
                }
                try? await Task.sleep(for: .seconds(5))
            }
        }
        defer { janitor.cancel() }
        // Product cards (issue 18): read when the API announces one (a LISTEN on a connection
        // of its own wakes this task, so a card waits for no poll; the read itself goes through
        // the database thread), and every second anyway (every 250 ms while that connection is
        // down); put into the playlists of the streams served here. Each card starts at the
        // moment the API received it, whenever it is read: a viewer sees it on time when it
        // reaches the playlists within the viewer's latency.
        let cards = Task { [logger, store] in
            guard let database else { return }
            let written = Counter(label: "storecast_packager_highlights_total")
            let listener = PostgresListener(conninfo: database.conninfo, channel: HighlightStore.channel, name: "packager-cards",
                                            onConnectionChange: ListenerConnectionLog.callback(logger, what: "product highlights", pollingWhileDown: "every 250 ms"))
            defer { listener.stop() }
            var wakeups = listener.wakeups.makeAsyncIterator()
            var book = HighlightBook()
            var failing = false
            var woken: PostgresListener.Wakeup?
            var watch = NotificationWatch()
            while !Task.isCancelled {
                do {
                    let after = book.lastID
                    let read = try await database.run { try HighlightStore.since($0, afterID: after) }
                    if failing { logger.info("reading product highlights again") }
                    failing = false
                    // Cards never read before (the read repeats the last 10 s, and cards of shows
                    // not served here are let go at once, so the book would take those again).
                    let foundNew = read.contains { $0.id > after ?? .min }
                    watch.read(after: woken, foundNew: foundNew)?.log(to: logger, rows: "product cards", reader: "this packager", poll: "a second",
                                                                      channel: HighlightStore.channel)
                    book.add(read)
                    book.prune(now: Date().timeIntervalSince1970, live: Set(store.keys().filter { store.package($0)?.ended == false }))
                    for key in book.byKey.keys {
                        guard let package = store.package(key) else { continue }
                        let ranges = book.ranges(key, session: package.sessionID)
                        guard package.highlights != ranges else { continue }
                        written.increment(by: ranges.filter { r in !package.highlights.contains { $0.id == r.id } }.count)
                        store.update(key) { $0?.highlights = ranges }
                    }
                } catch {
                    if !failing { logger.warning("cannot read product highlights; shows go on without new cards until the database answers", metadata: ["error": "\(error)"]) }
                    failing = true
                }
                guard let next = await wakeups.next() else { break }
                woken = next
            }
        }
        defer { cards.cancel() }
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { try await app.run() }
            if let secureApp { group.addTask { try await secureApp.run() } }
        }
        registration.cancel()
        if let database { _ = try? await database.run { try NodeRegistry.remove($0, id: config.node) } }
        // Shutting down: streams still live end their recordings here, as ready, with what was written.
        if let recorder {
            pipeline.stop()
            for key in store.keys() where store.package(key)?.ended == false {
                recorder.streamEnded(key: key, master: store.package(key)?.multivariantPlaylist())
            }
            recorder.drain()
        }
        await writes?.flush(timeout: .seconds(5))  // the recording rows and cursors queued before this
    }
}

/// Which of two racing answers came first (the other is dropped).
private final class FirstAnswer: Sendable {
    private let answered = Atomic<Bool>(false)
    func claim() -> Bool { !answered.exchange(true, ordering: .acquiringAndReleasing) }
}
