import Foundation
import Logging
import Metrics
import NIOCore
import PostgresClient
import RTMP
import StorecastRuntime
import StorecastWire
import Synchronization
import ZeroMQ

/// A publish that passed the key check.
public struct PublishGrant: Sendable, Equatable {
    public var streamID: Int64
    public var sessionID: Int64
    public var tenant: String
    public var streamName: String
    /// Set when this publish continues a session (reconnect or takeover).
    public var continuing: StreamTimeline?
    public var gap: Duration
    public var resumed: Bool
    /// The tenant's largest source: the connection refuses a bigger one.
    public var sourceLimits = SourceLimits.defaults
    /// The stream's own reconnect window (nil: the ingest's).
    public var reconnectWindow: Duration? = nil
}

/// What the RTMP handlers need from the rest of ingest: the key check against PostgreSQL, the
/// live-stream table (takeover, reconnect window), and the hand-off to the dispatcher.
public final class PublishGate: Sendable {
    private struct Shared {
        var table: LiveStreamTable
        var closers: [Int: @Sendable (String) -> Void] = [:]
        var keyFailures = KeyFailureBackoff()
    }

    /// Messages forwarded during the current iteration of the dispatcher's loop. Only touched on
    /// that loop, like everything sent to the dispatcher, so what is sent keeps its order.
    private let outbox: NIOLoopBoundBox<[(streamID: Int64, message: WireMessage)]>

    private let catalog: StreamCatalog
    /// Writes about live streams that the stream does not wait for (the database may be down:
    /// the show goes on, and they are retried).
    private let writes: DatabaseWriteBehind
    private let dispatcher: EventLoopZMQActor<WorkDispatcher>
    private let nodeID: String
    private let logger: Logger
    private let shared: Mutex<Shared>
    private let clock = ContinuousClock()
    private let refused = Counter(label: "storecast_ingest_publish_refused_total")
    private let accepted = Counter(label: "storecast_ingest_publish_accepted_total")
    private let resumedCounter = Counter(label: "storecast_ingest_publish_resumed_total")
    private let takeovers = Counter(label: "storecast_ingest_publish_takeovers_total")
    private let keyBackoffs = Counter(label: "storecast_ingest_publish_key_backoffs_total")

    /// The IP address of `ip:port` (IPv6 too: the port follows the last colon).
    static func address(of remote: String) -> String {
        guard let colon = remote.lastIndex(of: ":") else { return remote }
        return String(remote[..<colon])
    }

    init(catalog: StreamCatalog, writes: DatabaseWriteBehind, dispatcher: EventLoopZMQActor<WorkDispatcher>, nodeID: String, table: LiveStreamTable.Configuration, logger: Logger) {
        self.catalog = catalog
        self.writes = writes
        self.dispatcher = dispatcher
        self.nodeID = nodeID
        self.logger = logger
        self.shared = Mutex(Shared(table: LiveStreamTable(configuration: table)))
        self.outbox = .makeBoxSendingValue([], eventLoop: dispatcher.eventLoop)
    }

    public func authorize(_ request: PublishRequest, remote: String, owner: Int, closer: @escaping @Sendable (String) -> Void) async -> Result<PublishGrant, ServerSessionStateMachine.Rejection> {
        let address = Self.address(of: remote)
        if let wait = shared.withLock({ $0.keyFailures.wait(address, now: clock.now) }) {
            refused.increment()
            keyBackoffs.increment()
            logger.warning("publish refused without a key check: too many wrong stream keys from this address", metadata: ["remote": "\(remote)", "retry_after": "\(wait)"])
            return .failure(.badName("Too many wrong stream keys from your address; wait \(Int(wait.components.seconds) + 1) s and check the key in your Storecast dashboard."))
        }
        let record: StreamRecord?
        do {
            record = try await catalog.stream(forKey: request.streamKey)
        } catch {
            logger.error("stream key check failed: database unavailable", metadata: ["remote": "\(remote)", "error": "\(error)"])
            refused.increment()
            return .failure(.unavailable("Storecast cannot check stream keys right now; retry in a few seconds."))
        }
        guard let record else {
            let penalty = shared.withLock { $0.keyFailures.failed(address, now: clock.now) }
            logger.warning("publish refused: unknown stream key", metadata: ["remote": "\(remote)", "app": "\(request.app)", "key_prefix": "\(request.streamKey.prefix(7))", "next_wait": "\(penalty.map { "\($0)" } ?? "none")"])
            refused.increment()
            return .failure(.badName("Unknown stream key. Copy the key from your Storecast dashboard."))
        }
        shared.withLock { $0.keyFailures.succeeded(address) }
        guard !record.tenantSuspended else {
            logger.warning("publish refused: tenant suspended", metadata: ["remote": "\(remote)", "tenant": "\(record.tenantSlug)", "stream": "\(record.streamSlug)"])
            refused.increment()
            return .failure(.badName("The account \(record.tenantSlug) is suspended, so it cannot go live. Contact the platform's operator."))
        }
        let claim = shared.withLock { $0.table.claim(record.streamID, now: clock.now) }
        var grant = PublishGrant(streamID: record.streamID, sessionID: 0, tenant: record.tenantSlug, streamName: record.streamSlug, continuing: nil, gap: .zero, resumed: false, sourceLimits: record.sourceLimits,
                                reconnectWindow: record.reconnectWindow)
        switch claim {
        case .busy(let other):
            logger.warning("publish refused: stream already live from another connection", metadata: ["remote": "\(remote)", "stream": "\(record.streamSlug)", "live_from": "\(other)"])
            refused.increment()
            return .failure(.badName("Stream \(record.streamSlug) is already being published from \(other). Stop that encoder first."))
        case .resume(let session, let timeline, let gap):
            grant.sessionID = session
            grant.continuing = timeline
            grant.gap = gap
            grant.resumed = true
            resumedCounter.increment()
            logger.info("publisher reconnected within the window; continuing the session", metadata: ["remote": "\(remote)", "stream": "\(record.streamSlug)", "session": "\(session)", "gap": "\(gap)"])
        case .takeover(let session, let previous, let timeline, let gap):
            grant.sessionID = session
            grant.continuing = timeline
            grant.gap = gap
            grant.resumed = true
            takeovers.increment()
            let close = shared.withLock { $0.closers.removeValue(forKey: previous) }
            close?("taken over by a new publish of the same stream")
            logger.info("new publish takes over a silent connection", metadata: ["remote": "\(remote)", "stream": "\(record.streamSlug)", "session": "\(session)"])
        case .new:
            guard record.liveStreamsOfTenant < record.maxConcurrentStreams else {
                logger.warning("publish refused: tenant at concurrent-stream quota", metadata: ["remote": "\(remote)", "tenant": "\(record.tenantSlug)", "quota": "\(record.maxConcurrentStreams)"])
                refused.increment()
                return .failure(.quotaExceeded("Tenant \(record.tenantSlug) already has \(record.liveStreamsOfTenant) live streams (quota \(record.maxConcurrentStreams))."))
            }
            do {
                grant.sessionID = try await catalog.openSession(streamID: record.streamID, ingestNode: nodeID, remoteAddress: remote, client: request.flashVer)
            } catch {
                logger.error("could not open session", metadata: ["error": "\(error)"])
                refused.increment()
                return .failure(.unavailable("Storecast could not start the session; retry in a few seconds."))
            }
        }
        shared.withLock {
            $0.table.publishing(record.streamID, sessionID: grant.sessionID, owner: owner, remote: remote, now: clock.now)
            $0.closers[owner] = closer
        }
        if grant.resumed {
            let session = grant.sessionID
            writes.record("stream status", key: "status \(record.streamID)") { try StreamCatalog.setStatus($0, streamID: record.streamID, session: session, "live") }
        }
        // The transcode profile travels with the lease; it reaches the dispatcher before media.
        dispatcher.send(.profile(streamID: record.streamID, record.profile, ladderCeiling: record.ladderCeiling.map { UInt16(clamping: $0) }))
        accepted.increment()
        logger.info("publish started", metadata: ["remote": "\(remote)", "tenant": "\(record.tenantSlug)", "stream": "\(record.streamSlug)", "session": "\(grant.sessionID)", "client": "\(request.flashVer ?? "?")", "ladder_profile": "\(record.profile?.name ?? "worker default")"])
        return .success(grant)
    }

    /// Queues a message for the dispatcher. Everything forwarded during one iteration of the loop
    /// (with read pacing, every paced connection's reads of one tick) goes to ZeroMQ together at
    /// the end of the iteration, so libzmq's I/O thread wakes once for all of it.
    public func forward(_ message: WireMessage, streamID: Int64, on eventLoop: any EventLoop) {
        guard eventLoop === dispatcher.eventLoop else {
            // Connections live on the dispatcher's loop; anything else hops there first.
            dispatcher.execute { [self] in forward(message, streamID: streamID, on: dispatcher.eventLoop) }
            return
        }
        outbox.value.append((streamID, message))
        if outbox.value.count == 1 {
            // Runs after the loop has handled every socket that was ready in this iteration.
            eventLoop.execute { [self] in flushOutbox() }
        }
    }

    /// Hands the queued messages to the dispatcher now (on its loop; also before a stream end,
    /// so the end never overtakes the stream's last frames).
    private func flushOutbox() {
        guard !outbox.value.isEmpty else { return }
        let batch = outbox.value
        outbox.value.removeAll(keepingCapacity: true)
        dispatcher.send(.mediaBatch(batch))
    }

    /// Media arrived: the connection is alive and its timeline has advanced.
    public func media(_ grant: PublishGrant, owner: Int, timeline: StreamTimeline) {
        let now = clock.now
        shared.withLock { $0.table.media(grant.streamID, owner: owner, timeline: timeline, now: now) }
    }

    public func describe(_ grant: PublishGrant, width: Int?, height: Int?, video: String?, audio: String?) {
        writes.record("session codecs and size", key: "describe \(grant.sessionID)") {
            try StreamCatalog.describeSession($0, grant.sessionID, videoCodec: video, audioCodec: audio, width: width, height: height)
        }
    }

    public func frameRate(_ grant: PublishGrant, _ fps: Double) {
        dispatcher.send(.frameRate(streamID: grant.streamID, fps))
        writes.record("session frame rate", key: "frame rate \(grant.sessionID)") { try StreamCatalog.setFrameRate($0, grant.sessionID, fps) }
    }

    /// The source's bitrate over its last window (``SourceBitrateMeter``), for the session's
    /// live status; only the newest waits if the database is slow.
    public func sourceBitrate(_ grant: PublishGrant, _ bitsPerSecond: Int) {
        writes.record("session bitrate", key: "bitrate \(grant.sessionID)") { try StreamCatalog.setBitrate($0, grant.sessionID, bitsPerSecond) }
    }

    /// The publisher said it is done: end the session now.
    public func unpublished(_ grant: PublishGrant, owner: Int) {
        let ended = shared.withLock { s -> Int64? in
            s.closers.removeValue(forKey: owner)
            return s.table.unpublished(grant.streamID, owner: owner)
        }
        if ended != nil { end(grant, reason: "unpublished") }
    }

    /// The connection dropped without unpublishing: keep the session for the reconnect window.
    public func dropped(_ grant: PublishGrant, owner: Int, timeline: StreamTimeline?) {
        let now = clock.now
        let (generation, window) = shared.withLock { s -> (Int?, Duration) in
            s.closers.removeValue(forKey: owner)
            if let timeline { s.table.media(grant.streamID, owner: owner, timeline: timeline, now: now) }
            let window = grant.reconnectWindow ?? s.table.configuration.reconnectWindow
            return (s.table.dropped(grant.streamID, owner: owner, window: window, now: now), window)
        }
        guard let generation else { return }  // taken over: the new connection owns the session
        logger.info("publisher dropped; waiting for it to reconnect", metadata: ["stream": "\(grant.streamName)", "session": "\(grant.sessionID)", "window": "\(window)"])
        writes.record("stream status", key: "status \(grant.streamID)") { try StreamCatalog.setStatus($0, streamID: grant.streamID, session: grant.sessionID, "reconnecting") }
        Task { [self] in
            try? await Task.sleep(for: window)
            let expired = shared.withLock { $0.table.expire(grant.streamID, generation: generation) }
            if expired != nil { end(grant, reason: "disconnected") }
        }
    }

    private func end(_ grant: PublishGrant, reason: String) {
        // The stream's queued frames, then its end, from the dispatcher's loop (an expiring
        // reconnect window calls this from a task).
        dispatcher.execute { [self] in
            flushOutbox()
            dispatcher.send(.ended(streamID: grant.streamID, reason: reason))
        }
        logger.info("publish ended", metadata: ["stream": "\(grant.streamName)", "session": "\(grant.sessionID)", "reason": "\(reason)"])
        writes.record("session end") { try StreamCatalog.closeSession($0, grant.sessionID, streamID: grant.streamID, reason: reason) }
    }

    /// Ends every session still waiting in its window (graceful shutdown).
    func endAll() {
        let waiting = shared.withLock { s -> [(Int64, Int)] in
            s.table.entries.compactMap { id, e in
                if case .reconnecting = e.state { return (id, e.generation) }
                return nil
            }
        }
        for (stream, generation) in waiting {
            let session = shared.withLock { $0.table.expire(stream, generation: generation) }
            if let session {
                end(PublishGrant(streamID: stream, sessionID: session, tenant: "", streamName: "\(stream)", continuing: nil, gap: .zero, resumed: false), reason: "ingest shut down")
            }
        }
    }
}
