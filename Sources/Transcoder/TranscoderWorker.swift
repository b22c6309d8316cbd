import Foundation
import Logging
import Metrics
import Synchronization
import StorecastWire
import ZeroMQ

/// How many streams the worker runs, readable from any thread (the service waits on it to drain).
final class ActiveStreamCount: Sendable {
    let value = Atomic<Int>(0)
}

/// Commands posted to the worker's ZeroMQ thread.
enum WorkerCommand: Sendable {
    /// A transcoded message to push to a packager.
    case output(endpoint: String, WireMessage)
    /// Stop taking work (SIGTERM).
    case drain
}

/// The worker's ZeroMQ thread: a DEALER to each ingest (READY, heartbeats, leases and media in),
/// and a PUSH per packager (renditions out). Follows Paranoid Pirate: an ingest silent for three
/// heartbeats gets a fresh socket, with back-off from 1 s to 32 s.
final class TranscoderWorker: ZMQActorBody {
    typealias Command = WorkerCommand

    private final class IngestLink {
        let endpoint: String
        var socket: ZMQSocket
        var lastHeard: ContinuousClock.Instant
        var backoff: Duration = .seconds(1)
        var nextAttempt: ContinuousClock.Instant
        init(endpoint: String, socket: ZMQSocket, now: ContinuousClock.Instant) {
            self.endpoint = endpoint
            self.socket = socket
            self.lastHeard = now
            self.nextAttempt = now
        }
    }

    private let context: ZMQContext
    private let workerID: String
    private let capacity: UInt16
    private let settings: TranscoderSettings
    private let logger: Logger
    private let clock = ContinuousClock()
    private var links: [IngestLink] = []
    private var packagers: [String: ZMQSocket] = [:]
    private var jobs: [Int64: (job: StreamTranscodeJob, packager: String, link: ObjectIdentifier, ticket: CurrentLeaseTicket)] = [:] {
        didSet {
            activeStreams.value.store(jobs.count, ordering: .releasing)
        }
    }
    private let activeStreams: ActiveStreamCount
    private var draining = false
    private let post: @Sendable (WorkerCommand) -> Void
    private let streamsGauge = Gauge(label: "storecast_transcoder_streams")
    private let pushedBytes = Counter(label: "storecast_transcoder_output_bytes_total")
    private let droppedOutput = Counter(label: "storecast_transcoder_output_dropped_total")
    private var droppedSinceLog = 0
    private var lastDropLog: ContinuousClock.Instant?

    var readableSockets: [ZMQSocket] { links.map(\.socket) }

    init(context: ZMQContext, workerID: String, capacity: UInt16, ingestEndpoints: [String], settings: TranscoderSettings, activeStreams: ActiveStreamCount, logger: Logger, post: @escaping @Sendable (WorkerCommand) -> Void) throws {
        self.context = context
        self.activeStreams = activeStreams
        self.workerID = workerID
        self.capacity = capacity
        self.settings = settings
        self.logger = logger
        self.post = post
        let now = clock.now
        for endpoint in ingestEndpoints {
            let link = IngestLink(endpoint: endpoint, socket: try Self.connect(context, endpoint, workerID), now: now)
            links.append(link)
            try sendReady(link)
        }
    }

    private static func connect(_ context: ZMQContext, _ endpoint: String, _ workerID: String) throws -> ZMQSocket {
        let socket = try ZMQSocket(context: context, type: .dealer, maximumMessageSize: WireCodec.maximumMediaMessage)
        try socket.setRoutingID(Array(workerID.utf8))
        try socket.setReceiveHighWaterMark(20_000)
        try socket.setReconnectInterval(milliseconds: 1000, max: 32_000)
        try socket.connect(endpoint, server: "ingest")
        return socket
    }

    private func status() -> WorkerStatus {
        WorkerStatus(workerID: workerID, capacity: draining ? 0 : capacity, streams: Array(jobs.keys).sorted())
    }

    private func sendReady(_ link: IngestLink) throws {
        try link.socket.send([WireCodec.encode(.workerReady(status()))], dontWait: true)
    }

    func socketReadable(_ socket: ZMQSocket) throws {
        guard let link = links.first(where: { $0.socket === socket }), let frames = try socket.receive(dontWait: true), let body = frames.last else { return }
        link.lastHeard = clock.now
        link.backoff = .seconds(1)
        let message: WireMessage
        var skipped: [WireError] = []
        do { message = try WireCodec.decode(body, skipping: &skipped) } catch {
            logger.warning("undecodable message from ingest", metadata: ["ingest": "\(link.endpoint)", "error": "\(error)"])
            return
        }
        for error in skipped {
            logger.warning("undecodable message in a batch from ingest; the rest of the batch is used", metadata: ["ingest": "\(link.endpoint)", "error": "\(error)"])
        }
        deliver(message, from: link)
    }

    /// Carries out one message from ingest (a batch: each of its messages, in order).
    private func deliver(_ message: WireMessage, from link: IngestLink) {
        switch message {
        case .batch(let messages):
            for inner in messages { deliver(inner, from: link) }
        case .assign(let a):
            start(a, link: link)
        case .streamAnnounce(let a):
            jobs[a.streamID]?.job.submit(message)
        case .accessUnit(let u):
            jobs[u.streamID]?.job.submit(message)
        case .streamEnd(let e):
            if let entry = jobs.removeValue(forKey: e.streamID) {
                entry.job.submit(message)
                logger.info("stream ended", metadata: ["stream": "\(e.streamID)", "reason": "\(e.reason)"])
            }
        case .leaseRenewal(let id, let ticket):
            // Only from the ingest that leased the stream; the next announce carries it.
            if let entry = jobs[id], entry.link == ObjectIdentifier(link) { entry.ticket.renew(ticket) }
        case .release(let id):
            if let entry = jobs.removeValue(forKey: id) {
                entry.job.release()
                logger.info("stream handed over to another worker", metadata: ["stream": "\(id)"])
            }
        default:
            break
        }
    }

    private func start(_ assignment: Assignment, link: IngestLink) {
        let endpoint = assignment.packagerEndpoint
        if let existing = jobs.removeValue(forKey: assignment.streamID) {
            existing.job.stop()
            if existing.packager != endpoint {
                // The stream moved to another packager (ingest thought this one gone): the old
                // one ends its package rather than serve a frozen playlist.
                post(.output(endpoint: existing.packager, .streamEnd(StreamEnd(streamID: assignment.streamID, reason: "moved to another packager"))))
            }
        }
        let post = self.post
        let ticket = CurrentLeaseTicket(assignment.leaseTicket)
        let job = StreamTranscodeJob(streamID: assignment.streamID, settings: settings.applying(assignment.profile, ceiling: assignment.ladderCeiling.map(Int.init)), replayUntil: assignment.replayUntil, logger: logger) { out in
            // The packager takes this stream's media from this worker once an announce shows
            // the lease ingest gave it.
            guard case .streamAnnounce(var announce) = out else { return post(.output(endpoint: endpoint, out)) }
            announce.leaseTicket = ticket.value
            post(.output(endpoint: endpoint, .streamAnnounce(announce)))
        }
        jobs[assignment.streamID] = (job, endpoint, ObjectIdentifier(link), ticket)
        logger.info("stream assigned", metadata: ["stream": "\(assignment.streamID)", "packager": "\(endpoint)", "ladder_profile": "\(assignment.profile?.name ?? "worker default")", "ladder_ceiling": "\(assignment.ladderCeiling.map(String.init) ?? "-")", "replay_until_ms": "\(assignment.replayUntil.map(String.init) ?? "-")"])
    }

    func handle(_ command: WorkerCommand) throws {
        switch command {
        case .output(let endpoint, let message):
            let socket: ZMQSocket
            if let existing = packagers[endpoint] {
                socket = existing
            } else {
                socket = try ZMQSocket(context: context, type: .push, maximumMessageSize: WireCodec.maximumControlMessage)
                try socket.setSendHighWaterMark(20_000)
                try socket.connect(endpoint, server: "packager")
                packagers[endpoint] = socket
            }
            let bytes = WireCodec.encode(message)
            if try socket.send([bytes], dontWait: true) {
                pushedBytes.increment(by: bytes.count)
            } else {
                // At the high-water mark (the packager stopped reading): dropped, counted, and
                // logged at most every 10 s, not once per unit.
                droppedOutput.increment()
                droppedSinceLog += 1
                let now = clock.now
                if lastDropLog.map({ now - $0 >= .seconds(10) }) ?? true {
                    logger.warning("packager not keeping up; rendition data dropped at the high-water mark", metadata: ["packager": "\(endpoint)", "units_dropped": "\(droppedSinceLog)"])
                    lastDropLog = now
                    droppedSinceLog = 0
                }
            }
        case .drain:
            draining = true
            for link in links { _ = try? link.socket.send([WireCodec.encode(.workerHeartbeat(status()))], dontWait: true) }
        }
    }

    func tick(now: ContinuousClock.Instant) throws {
        for link in links {
            if now - link.lastHeard > .seconds(3) {
                guard now >= link.nextAttempt else { continue }
                logger.warning("ingest silent for 3 heartbeats; reconnecting", metadata: ["ingest": "\(link.endpoint)", "backoff": "\(link.backoff)"])
                for (id, entry) in jobs where entry.link == ObjectIdentifier(link) {
                    entry.job.stop()
                    jobs.removeValue(forKey: id)
                }
                link.socket = try Self.connect(context, link.endpoint, workerID)
                link.nextAttempt = now + link.backoff
                link.backoff = min(link.backoff * 2, .seconds(32))
                try sendReady(link)
            } else {
                try link.socket.send([WireCodec.encode(.workerHeartbeat(status()))], dontWait: true)
            }
        }
    }
}
