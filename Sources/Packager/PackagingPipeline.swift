import Foundation
import Logging
import Metrics
import StorecastRuntime
import StorecastWire
import ZeroMQ

/// The packager's ZeroMQ thread: a bound PULL that transcoders push renditions to. The shell of
/// three deciders: ``MediaAdmission`` (whose media to take: the worker ingest leased the stream
/// to), ``StreamLifecycle`` (which announces to take, when silent streams end) and
/// ``StreamPackager`` (segmenting, retiring, numbering); it carries out their actions on the
/// ``PackageStore``, the recorder, DVR, cursors, metrics and logs.
final class PackagingPipeline: ZMQActorBody {
    typealias Command = Never

    private let pull: ZMQSocket
    private let store: PackageStore
    private let targetDuration: Double
    private let windowSegments: Int
    private let logger: Logger
    private let recorder: Recorder?
    private let dvr: DVRArchive?
    private let dvrWindow: Double
    private var packager: StreamPackager
    /// Packages this packager served before it restarted, continued when their streams come back.
    private var resumptions: [String: PackageResumption]
    /// Cursors changed since the last tick, written down once a second (`saveCursors`).
    private var changedCursors: [String: PackageCursor] = [:]
    private let saveCursors: (@Sendable ([PackageCursor]) -> Void)?
    /// A package that left memory: its cursors go (a restart must not continue it).
    private let forgetCursors: (@Sendable (String) -> Void)?
    /// A session's first playable part (stream id, session id): the `stream.live` event.
    private let onLive: (@Sendable (Int64, Int64) -> Void)?
    /// A stream's health changed (``StreamHealth``): `stream.health_changed` and its live status.
    private let onHealth: (@Sendable (StreamHealth.Report) -> Void)?
    /// A session's renditions changed (stream id, session id, renditions): its live status.
    private let onRenditions: (@Sendable (Int64, Int64, [StreamLiveStatus.Rendition]) -> Void)?
    private var health = StreamHealth()
    /// When the message being delivered arrived: one clock read per message (a batch of many
    /// units), not per unit.
    private var received = ContinuousClock.now
    private var renditionsReported: [Int64: (session: Int64, renditions: [StreamLiveStatus.Rendition])] = [:]
    private let healthChanges = Counter(label: "storecast_packager_health_changes_total")
    private let cardsInBand = Counter(label: "storecast_packager_highlights_in_band_total")
    /// Streams started here whose first part is not out yet, by key: (stream id, session id).
    private var awaitingLive: [String: (streamID: Int64, sessionID: Int64)] = [:]
    /// Resumptions not claimed within this long after start belong to shows that did not come back.
    private let resumptionDeadline = ContinuousClock.now + .seconds(PackageResumption.claimWithinSeconds)
    /// How long after start a stream this packager served before it restarted is answered 503
    /// "retry" rather than 404 while it is not back (``PackageStore/expectResumptions(_:)``): a
    /// live stream's transcoder announces it again within a GOP; one that ended meanwhile gets
    /// its 404 after this.
    static let retryAnswersFor: Duration = .seconds(10)
    private let retryAnswersDeadline = ContinuousClock.now + PackagingPipeline.retryAnswersFor
    private var retryAnswersOver = false
    private let resumed = Counter(label: "storecast_packager_packages_resumed_total")
    private let segmentsCounter = Counter(label: "storecast_packager_segments_total")
    private let partsCounter = Counter(label: "storecast_packager_parts_total")
    private let unitsCounter = Counter(label: "storecast_packager_units_total")
    private let thumbnailsCounter = Counter(label: "storecast_packager_thumbnails_total")
    private let splicesCounter = Counter(label: "storecast_packager_splices_total")
    private let replayDropped = Counter(label: "storecast_packager_replayed_units_dropped_total")
    private let misalignedCuts = Counter(label: "storecast_packager_audio_cuts_misaligned_total")
    private let refusedClaims = Counter(label: "storecast_packager_announces_refused_total")
    private let refusedMedia = Counter(label: "storecast_packager_media_refused_total")
    /// Streams and senders whose refused announce was logged (transcoders repeat announces every GOP).
    private var refusalsLogged: Set<String> = []
    /// Streams and senders whose refused media was logged.
    private var mediaRefusalsLogged: Set<String> = []
    /// Checks lease tickets (nil: every sender's media is taken, as on an unauthenticated socket).
    private let leaseKey: LeaseTicketKey?
    /// Whose media is taken for each stream.
    private var admission: MediaAdmission

    var readableSockets: [ZMQSocket] { [pull] }

    init(context: ZMQContext, bindEndpoint: String, store: PackageStore, targetDuration: Double, partTarget: Double, chunkTarget: Double, windowSegments: Int, recorder: Recorder?, dvr: DVRArchive?, dvrWindow: Double, endedRetention: Duration = .seconds(120),
         resume: [PackageCursor] = [], saveCursors: (@Sendable ([PackageCursor]) -> Void)? = nil,
         forgetCursors: (@Sendable (String) -> Void)? = nil, onLive: (@Sendable (Int64, Int64) -> Void)? = nil, leaseKey: LeaseTicketKey? = nil,
         leaseClockSkew: Duration = LeaseTicketKey.defaultClockSkewAllowance,
         idleEnd: Duration = StreamLifecycle.defaultIdleEnd, onHealth: (@Sendable (StreamHealth.Report) -> Void)? = nil, onRenditions: (@Sendable (Int64, Int64, [StreamLiveStatus.Rendition]) -> Void)? = nil,
         logger: Logger) throws {
        self.onHealth = onHealth
        self.onRenditions = onRenditions
        admission = MediaAdmission(clockSkewAllowance: leaseClockSkew)
        self.onLive = onLive
        self.leaseKey = leaseKey
        self.forgetCursors = forgetCursors
        self.lifecycle = StreamLifecycle(endedRetention: endedRetention, idleEnd: idleEnd)
        self.resumptions = PackageResumption.byStream(resume)
        store.expectResumptions(Set(resumptions.keys))
        self.saveCursors = saveCursors
        self.recorder = recorder
        self.dvr = dvr
        self.dvrWindow = dvr == nil ? 0 : dvrWindow
        pull = try ZMQSocket(context: context, type: .pull, maximumMessageSize: WireCodec.maximumMediaMessage)
        try pull.setReceiveHighWaterMark(50_000)
        try pull.bind(bindEndpoint)
        self.store = store
        self.targetDuration = targetDuration
        self.packager = StreamPackager(configuration: .init(targetDuration: targetDuration, partTarget: partTarget, chunkTarget: chunkTarget))
        self.windowSegments = windowSegments
        self.logger = logger
    }

    func handle(_ command: Never) throws {}
    /// When silent streams end and ended packages leave memory.
    private var lifecycle: StreamLifecycle

    func tick(now: ContinuousClock.Instant) throws {
        if !changedCursors.isEmpty, let saveCursors {
            saveCursors(Array(changedCursors.values))
            changedCursors = [:]
        }
        if !resumptions.isEmpty, now > resumptionDeadline { resumptions = [:] }
        if !retryAnswersOver, now > retryAnswersDeadline {
            retryAnswersOver = true
            store.resumptionsOver()
        }
        admission.expire(now: now)
        carryCards(now: now)
        for report in health.evaluate(now: now) {
            healthChanges.increment()
            let key = packager.key(of: report.streamID) ?? "\(report.streamID)"
            let metadata: Logger.Metadata = ["stream": "\(key)", "session": "\(report.sessionID)", "health": "\(report.state.rawValue)", "reasons": "\(report.reasons.map(\.message))"]
            if report.state == .healthy { logger.info("stream health changed", metadata: metadata) } else { logger.warning("stream health changed", metadata: metadata) }
            onHealth?(report)
        }
        for action in lifecycle.tick(now: now, heard: packager.takeHeard()) {
            switch action {
            case .end(let id, let reason):
                end(StreamEnd(streamID: id, reason: reason), at: now)
            case .forget(let key):
                var removed = false
                store.update(key) { package in
                    if package?.ended == true { package = nil; removed = true }
                }
                if removed {
                    dvr?.deleteStream(key)
                    forgetCursors?(key)
                    logger.info("ended stream left memory", metadata: ["stream": "\(key)"])
                }
            }
        }
    }

    func socketReadable(_ socket: ZMQSocket) throws {
        guard let (frames, sender) = try socket.receiveWithSender(dontWait: true), let body = frames.last else { return }
        received = .now
        let message: WireMessage
        var skipped: [WireError] = []
        do { message = try WireCodec.decode(body, skipping: &skipped) } catch {
            logger.warning("undecodable rendition message", metadata: ["error": "\(error)"])
            return
        }
        for error in skipped {
            logger.warning("undecodable message in a batch of renditions; the rest of the batch is used", metadata: ["error": "\(error)"])
        }
        deliver(message, from: leaseKey == nil ? nil : sender ?? "")
        if received - cardsLooked >= Self.cardsInterval { carryCards(now: received) }
    }

    /// How often the packages' product cards are looked at for new ones to carry in band: the
    /// media written in between is what a card can come late by in band.
    static let cardsInterval: Duration = .milliseconds(100)
    private var cardsLooked = ContinuousClock.now

    /// Product cards into the media too (``InBandCards``), once each, in every video rendition.
    private func carryCards(now: ContinuousClock.Instant) {
        cardsLooked = now
        for key in packager.keys {
            guard let cards = store.package(key)?.highlights, !cards.isEmpty else { continue }
            let carried = packager.carry(cards, key: key)
            if !carried.isEmpty {
                cardsInBand.increment(by: carried.count)
                logger.debug("product cards carried in band", metadata: ["stream": "\(key)", "cards": "\(carried)"])
            }
        }
    }

    /// Carries out one message from a transcoder (a batch: each of its messages, in order).
    /// `sender` is its authenticated name, nil when leases are not checked.
    private func deliver(_ message: WireMessage, from sender: String?) {
        switch message {
        case .batch(let messages): messages.forEach { deliver($0, from: sender) }
        case .streamAnnounce(let a): announce(a, from: sender)
        case .accessUnit(let u):
            guard admits(u.streamID, sender, "units") else { return }
            unit(u)
        case .streamEnd(let e):
            guard admits(e.streamID, sender, "an end") else { return }
            end(e, at: .now)
        case .thumbnail(let t):
            guard admits(t.streamID, sender, "a thumbnail"), let key = packager.key(of: t.streamID) else { return }
            thumbnailsCounter.increment()
            store.update(key) { $0?.thumbnail = t }
        default: break
        }
    }

    /// Whether media of `streamID` from `sender` is taken (``MediaAdmission``); a refusal is
    /// counted, and logged once per stream and sender.
    private func admits(_ streamID: Int64, _ sender: String?, _ what: String) -> Bool {
        guard let sender, !admission.admits(streamID: streamID, sender: sender, now: received) else { return true }
        refusedMedia.increment()
        if mediaRefusalsLogged.count > 1024 { mediaRefusalsLogged = [] }
        if mediaRefusalsLogged.insert("\(streamID) \(sender)").inserted {
            logger.warning("media refused: the sender does not hold this stream's lease", metadata: [
                "stream_id": "\(streamID)", "sender": "\(sender)", "holder": "\(admission.holder(of: streamID) ?? "none")", "refused": "\(what)"])
        }
        return false
    }

    private func announce(_ a: StreamAnnounce, from sender: String?) {
        let key = PackageStore.key(tenant: a.tenant, stream: a.streamName)
        let verdict: MediaAdmission.Verdict
        if case .refuse(let reason) = lifecycle.claim(streamID: a.streamID, key: key) {
            verdict = .refuse(reason: reason)
        } else if let sender, let leaseKey {
            let proof = leaseKey.verify(a.leaseTicket, streamID: a.streamID, sessionID: a.sessionID, tenant: a.tenant, stream: a.streamName, worker: sender)
            verdict = admission.announce(streamID: a.streamID, sender: sender, ticket: proof.map { .init(lease: .init(session: a.sessionID, grantedAt: $0.grantedAt), expiresAt: $0.expiresAt) },
                                         wallClock: LeaseTicketKey.milliseconds(Date()), now: .now)
        } else {
            verdict = .accept
        }
        switch verdict {
        case .refuse(let reason):
            refusedClaims.increment()
            if refusalsLogged.count > 1024 { refusalsLogged = [] }
            if refusalsLogged.insert("\(a.streamID) \(sender ?? "-")").inserted {
                logger.warning("announce refused, its media is not packaged: \(reason)", metadata: ["stream": "\(key)", "stream_id": "\(a.streamID)", "session": "\(a.sessionID)", "sender": "\(sender ?? "-")", "ticket_bytes": "\(a.leaseTicket.count)"])
            }
            return
        case .holder(let from):
            logger.info("stream's media now taken from its lease holder", metadata: ["stream": "\(key)", "stream_id": "\(a.streamID)", "holder": "\(sender ?? "-")", "previous": "\(from ?? "none")"])
        case .accept:
            break
        }
        let package = store.package(key)
        let listed = package.map { p in p.renditions.mapValues(\.edge.lastSequence) }
        let actions = packager.announce(a, listed: listed, resumption: package == nil ? resumptions[key] : nil, wallClock: Date())
        if actions.contains(where: { if case .started = $0 { true } else { false } }) { awaitingLive[key] = (a.streamID, a.sessionID) }
        carryOut(actions)
        // The session the package shows now: only its product cards go into its playlists.
        if let now = store.package(key), now.sessionID != a.sessionID { store.update(key) { $0?.sessionID = a.sessionID } }
        health.announce(streamID: a.streamID, sessionID: a.sessionID, videoTracks: a.tracks.filter { $0.kind == .video }.map(\.trackID),
                        audioTracks: a.tracks.filter { $0.kind == .audio }.map(\.trackID), now: .now)
        let renditions = a.tracks.sorted { ($0.kind == .video ? 0 : 1, -Int($0.height)) < ($1.kind == .video ? 0 : 1, -Int($1.height)) }.map { t in
            StreamLiveStatus.Rendition(name: t.name, codec: t.codec, width: t.kind == .video ? Int(t.width) : nil, height: t.kind == .video ? Int(t.height) : nil,
                                       bitrate: t.bitrate > 0 ? Int(t.bitrate) : nil)
        }
        if renditionsReported[a.streamID].map({ $0.session != a.sessionID || $0.renditions != renditions }) ?? true {
            renditionsReported[a.streamID] = (a.sessionID, renditions)
            onRenditions?(a.streamID, a.sessionID, renditions)
        }
    }

    private func unit(_ u: AccessUnit) {
        guard let actions = packager.unit(u, wallClock: { Date() }) else { return }
        health.unit(streamID: u.streamID, track: u.trackID, keyframe: u.isKeyframe, now: received)
        unitsCounter.increment()
        carryOut(actions)
    }

    private func end(_ e: StreamEnd, at now: ContinuousClock.Instant) {
        let actions = packager.end(e)
        health.ended(streamID: e.streamID)
        renditionsReported[e.streamID] = nil
        guard !actions.isEmpty else { return }
        lifecycle.ended(e.streamID, at: now)
        carryOut(actions)
    }

    /// What ``StreamPackager`` decided, on the store, the recorder, DVR, metrics and logs.
    private func carryOut(_ actions: [StreamPackager.Action]) {
        for action in actions {
            switch action {
            case .started(let streamID, let key, let tenant, let stream):
                lifecycle.started(streamID, key: key)
                recorder?.streamStarted(key: key, tenant: tenant, stream: stream)
            case .resumed(let key, let generation):
                resumptions[key] = nil
                resumed.increment()
                logger.info("continuing a package served before this packager restarted", metadata: ["stream": "\(key)", "generation": "\(generation)"])
            case .publish(let output, let rendition, let key):
                publish(output, rendition: rendition, key: key)
            case .retire(let key, let retired):
                store.update(key) { package in
                    for name in retired {
                        package?.renditions[name]?.retired = true
                        package?.renditions[name]?.ended = true
                    }
                }
                logger.warning("renditions retired by the transcoder", metadata: ["stream": "\(key)", "renditions": "\(retired)"])
            case .refusedTrack(let key, let rendition, let error):
                logger.error("cannot package rendition", metadata: ["stream": "\(key)", "rendition": "\(rendition)", "error": "\(error)"])
            case .install(let key, let streamID, let tenant, let name, let fresh, let generation):
                store.update(key) { package in
                    var p = package ?? StreamPackage(streamID: streamID, tenant: tenant, name: name, renditions: [:], generation: generation)
                    p.ended = false
                    for (name, rendition) in fresh {
                        if p.renditions[name] != nil { p.renditions[name]!.reconfigure(rendition) } else { p.renditions[name] = rendition }
                    }
                    package = p
                }
                store.resumptionDone(key)  // served from here on: no more "retry" answers for it
            case .packaging(let key, let renditions):
                logger.info("packaging stream", metadata: ["stream": "\(key)", "renditions": "\(renditions)"])
            case .spliced(let key, let rendition, let dts):
                splicesCounter.increment()
                logger.info("rendition spliced: a new transcoder continues the timeline", metadata: ["stream": "\(key)", "rendition": "\(rendition)", "at_dts": "\(dts)"])
            case .replayedUnitsDropped(let n):
                replayDropped.increment(by: n)
            case .audioCutsMisaligned(let n):
                misalignedCuts.increment(by: n)
            case .ended(let key, let reason):
                store.update(key) { package in
                    package?.ended = true
                    for name in package?.renditions.keys.map({ $0 }) ?? [] { package?.renditions[name]?.ended = true }
                }
                recorder?.streamEnded(key: key, master: store.package(key)?.multivariantPlaylist())
                logger.info("stream ended", metadata: ["stream": "\(key)", "reason": "\(reason)"])
            }
        }
    }

    private func publish(_ output: SegmenterOutput, rendition: String, key: String) {
        guard !output.isEmpty else { return }
        if let segment = output.segment {
            segmentsCounter.increment()
            if let recorder, let initSegment = store.package(key)?.renditions[rendition]?.initSegment {
                recorder.segment(key: key, rendition: rendition, initSegment: initSegment, segment: segment, targetDuration: targetDuration)
            }
            dvr?.write(key, rendition: rendition, segment: segment)
        }
        if !output.parts.isEmpty { partsCounter.increment(by: output.parts.count) }
        if !output.parts.isEmpty || output.segment != nil, let live = awaitingLive.removeValue(forKey: key) { onLive?(live.streamID, live.sessionID) }
        let (window, dvrWindow) = (windowSegments, self.dvrWindow)
        var expired: [Int] = []
        let chunksOnly = output.parts.isEmpty && output.segment == nil
        var cursor: PackageCursor?
        store.update(key, chunksOnly: chunksOnly) { package in
            expired = package?.renditions[rendition]?.add(output, window: window, dvrWindow: dvrWindow) ?? []
            if let segment = output.segment, let p = package, let r = p.renditions[rendition], let last = r.segments.last {
                let offset = segment.programDateTime.map { $0 - Double(segment.startTime) / Double(r.track.timescale) }
                cursor = PackageCursor(streamKey: key, rendition: rendition, generation: p.generation, lastSequence: last.sequence,
                                       discontinuitySequence: r.edgeDiscontinuitySequence, initVersion: r.initVersion, clockOffset: offset,
                                       lastEnd: last.programDateTime.map { $0 + last.duration })
            }
        }
        if let cursor { changedCursors[key + "/" + rendition] = cursor }
        dvr?.delete(key, rendition: rendition, sequences: expired)
    }
}
