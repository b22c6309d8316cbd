import Foundation
import Logging
import Metrics
import StorecastRuntime
import StorecastWire
import ZeroMQ

/// The packager's ZeroMQ thread: a bound PULL that transcoders push renditions to. Segments
/// each rendition and publishes finished segments into the ``PackageStore``.
final class PackagingPipeline: ZMQActorBody {
    typealias Command = Never

    private struct Stream {
        var key: String
        var segmenters: [UInt8: RenditionSegmenter]
        var names: [UInt8: String]
        var anchor: ClockAnchor?
        /// The ladder rung whose segment cuts the audio follows (the ladder's keyframes are
        /// aligned, so any rung will do; the passed-through source has the publisher's own).
        var referenceVideo: UInt8?
        /// Media came since the last tick (``StreamLifecycle`` decides on silence).
        var heard = false
        /// The last announce taken: the transcoder repeats it at every keyframe (so a packager
        /// that restarted picks the stream up), and a repeat changes nothing.
        var announce: StreamAnnounce?
    }

    private let pull: ZMQSocket
    private let store: PackageStore
    private let targetDuration: Double
    private let partTarget: Double
    private let chunkTarget: Double
    private let windowSegments: Int
    private let logger: Logger
    private let recorder: Recorder?
    private let dvr: DVRArchive?
    private let dvrWindow: Double
    private var streams: [Int64: Stream] = [:]
    /// Packages this packager served before it restarted, continued when their streams come back.
    private var resumptions: [String: PackageResumption]
    /// Cursors changed since the last tick, written down once a second (`saveCursors`).
    private var changedCursors: [String: PackageCursor] = [:]
    private let saveCursors: (@Sendable ([PackageCursor]) -> Void)?
    /// A package that left memory: its cursors go (a restart must not continue it).
    private let forgetCursors: (@Sendable (String) -> Void)?
    /// Resumptions not claimed within this long after start belong to shows that did not come back.
    private let resumptionDeadline = ContinuousClock.now + .seconds(PackageResumption.claimWithinSeconds)
    private let resumed = Counter(label: "storecast_packager_packages_resumed_total")
    private let segmentsCounter = Counter(label: "storecast_packager_segments_total")
    private let partsCounter = Counter(label: "storecast_packager_parts_total")
    private let unitsCounter = Counter(label: "storecast_packager_units_total")
    private let thumbnailsCounter = Counter(label: "storecast_packager_thumbnails_total")
    private let splicesCounter = Counter(label: "storecast_packager_splices_total")
    private let replayDropped = Counter(label: "storecast_packager_replayed_units_dropped_total")
    private let misalignedCuts = Counter(label: "storecast_packager_audio_cuts_misaligned_total")
    private let refusedClaims = Counter(label: "storecast_packager_announces_refused_total")
    /// Stream ids whose refused announce was logged (the transcoder repeats announces every GOP).
    private var refusalsLogged: Set<Int64> = []

    var readableSockets: [ZMQSocket] { [pull] }

    init(context: ZMQContext, bindEndpoint: String, store: PackageStore, targetDuration: Double, partTarget: Double, chunkTarget: Double, windowSegments: Int, recorder: Recorder?, dvr: DVRArchive?, dvrWindow: Double, endedRetention: Duration = .seconds(120),
         resume: [PackageCursor] = [], saveCursors: (@Sendable ([PackageCursor]) -> Void)? = nil,
         forgetCursors: (@Sendable (String) -> Void)? = nil, logger: Logger) throws {
        self.forgetCursors = forgetCursors
        self.lifecycle = StreamLifecycle(endedRetention: endedRetention)
        self.resumptions = PackageResumption.byStream(resume)
        self.saveCursors = saveCursors
        self.recorder = recorder
        self.dvr = dvr
        self.dvrWindow = dvr == nil ? 0 : dvrWindow
        pull = try ZMQSocket(context: context, type: .pull, maximumMessageSize: WireCodec.maximumMediaMessage)
        try pull.setReceiveHighWaterMark(50_000)
        try pull.bind(bindEndpoint)
        self.store = store
        self.targetDuration = targetDuration
        self.partTarget = partTarget
        self.chunkTarget = chunkTarget
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
        var heard: Set<Int64> = []
        for i in streams.indices where streams.values[i].heard {
            heard.insert(streams.keys[i])
            streams.values[i].heard = false
        }
        for action in lifecycle.tick(now: now, heard: heard) {
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
        guard let frames = try socket.receive(dontWait: true), let body = frames.last else { return }
        let message: WireMessage
        var skipped: [WireError] = []
        do { message = try WireCodec.decode(body, skipping: &skipped) } catch {
            logger.warning("undecodable rendition message", metadata: ["error": "\(error)"])
            return
        }
        for error in skipped {
            logger.warning("undecodable message in a batch of renditions; the rest of the batch is used", metadata: ["error": "\(error)"])
        }
        deliver(message)
    }

    /// Carries out one message from a transcoder (a batch: each of its messages, in order).
    private func deliver(_ message: WireMessage) {
        switch message {
        case .batch(let messages): messages.forEach(deliver)
        case .streamAnnounce(let a): announce(a)
        case .accessUnit(let u): unit(u)
        case .streamEnd(let e): end(e, at: .now)
        case .thumbnail(let t):
            guard let stream = streams[t.streamID] else { return }
            thumbnailsCounter.increment()
            store.update(stream.key) { $0?.thumbnail = t }
        default: break
        }
    }

    private func announce(_ a: StreamAnnounce) {
        let key = PackageStore.key(tenant: a.tenant, stream: a.streamName)
        if case .refuse(let reason) = lifecycle.claim(streamID: a.streamID, key: key) {
            refusedClaims.increment()
            if refusalsLogged.count > 1024 { refusalsLogged = [] }
            if refusalsLogged.insert(a.streamID).inserted {
                logger.warning("announce refused, its media is not packaged: \(reason)", metadata: ["stream": "\(key)", "stream_id": "\(a.streamID)", "session": "\(a.sessionID)"])
            }
            return
        }
        // A stream this packager has not seen (a show starting, or restarting after it ended).
        let starting = streams[a.streamID] == nil
        if !starting, !a.discontinuity, streams[a.streamID]?.announce == a { return }  // the transcoder's repeat
        if starting { recorder?.streamStarted(key: key, tenant: a.tenant, stream: a.streamName) }
        var stream = streams[a.streamID] ?? Stream(key: key, segmenters: [:], names: [:])
        stream.heard = true
        stream.announce = a
        if starting { lifecycle.started(a.streamID, key: key) }
        // A package this packager served before it restarted: the same generation, numbered on.
        let resumption = starting && store.package(key) == nil ? resumptions.removeValue(forKey: key) : nil
        if resumption != nil {
            resumed.increment()
            logger.info("continuing a package served before this packager restarted", metadata: ["stream": "\(key)", "generation": "\(resumption!.generation)"])
        }
        if a.discontinuity {
            // The timeline jumps (publisher reconnect, failover): close every open segment and
            // start the next ones with EXT-X-DISCONTINUITY.
            for (id, var segmenter) in stream.segmenters {
                if let name = stream.names[id] { publish(segmenter.finish(), rendition: name, key: key) }
                segmenter.markDiscontinuity()
                stream.segmenters[id] = segmenter
            }
        }
        // Renditions the new announce leaves out (the transcoder shed them, or a new worker plans
        // a smaller ladder) end here and leave the multivariant playlist.
        let kept = Set(a.tracks.map(\.trackID))
        var retired: [String] = []
        for (id, var segmenter) in stream.segmenters where !kept.contains(id) {
            guard let name = stream.names[id] else { continue }
            let last = segmenter.finish()
            publish(last, rendition: name, key: key)
            if id == stream.referenceVideo { forwardVideoCut(last, timescale: segmenter.track.timescale, in: &stream) }
            stream.segmenters[id] = nil
            stream.names[id] = nil
            retired.append(name)
        }
        if !retired.isEmpty {
            store.update(key) { package in
                for name in retired {
                    package?.renditions[name]?.retired = true
                    package?.renditions[name]?.ended = true
                }
            }
            logger.warning("renditions retired by the transcoder", metadata: ["stream": "\(key)", "renditions": "\(retired.sorted())"])
        }
        var fresh: [String: RenditionPackage] = [:]
        for track in a.tracks {
            if let existing = stream.segmenters[track.trackID], existing.track == track { continue }
            do {
                fresh[track.name] = try RenditionPackage(track: track)
            } catch {
                logger.error("cannot package rendition", metadata: ["stream": "\(key)", "rendition": "\(track.name)", "error": "\(error)"])
                continue
            }
            // A changed track (new resolution or codec configuration): what the old segmenter
            // holds is published first, so the open segment and its parts are complete.
            if var old = stream.segmenters[track.trackID], let oldName = stream.names[track.trackID] {
                let last = old.finish()
                publish(last, rendition: oldName, key: key)
                if track.trackID == stream.referenceVideo { forwardVideoCut(last, timescale: old.track.timescale, in: &stream) }
            }
            var segmenter = RenditionSegmenter(track: track, targetDuration: targetDuration, partTarget: partTarget, chunkTarget: chunkTarget,
                                               firstSequence: resumption?.firstSequence(track.name) ?? nextSequence(key, track.name))
            if let cc = resumption?.discontinuitySequence(track.name) {
                fresh[track.name]?.discontinuitySequence = cc
                fresh[track.name]?.initVersion = resumption?.initVersion(track.name) ?? 0
                segmenter.markDiscontinuity()
            }
            segmenter.clockAnchor = stream.anchor
            // A starting show's first segments may end at the transcoder's fast-start keyframe
            // (the passed-through source keeps the publisher's keyframes).
            if starting, !track.isSource { segmenter.startMinimum = min(partTarget, targetDuration / 6) }
            // A new session on a package still in memory (the last show ended within the
            // retention) starts its timeline over after what is listed.
            let continuesPackage = starting && (store.package(key)?.renditions[track.name]?.edge.lastSequence ?? -1) >= 0
            if stream.segmenters[track.trackID] != nil || a.discontinuity || continuesPackage { segmenter.markDiscontinuity() }
            stream.segmenters[track.trackID] = segmenter
            stream.names[track.trackID] = track.name
        }
        let videos = a.tracks.filter { $0.kind == .video }
        stream.referenceVideo = (videos.filter { !$0.isSource }.min { $0.trackID < $1.trackID } ?? videos.min { $0.trackID < $1.trackID })?.trackID
        for track in a.tracks where track.kind == .audio { stream.segmenters[track.trackID]?.followsVideoCuts = stream.referenceVideo != nil }
        for track in a.tracks where track.kind == .audio && fresh[track.name] != nil {
            // A new audio segmenter of a rendition with nothing listed may number its first segment.
            let listed = store.package(key)?.renditions[track.name]?.edge.lastSequence ?? -1
            stream.segmenters[track.trackID]?.mayRenumberFirstSegment = listed < 1
        }
        streams[a.streamID] = stream
        store.update(key) { package in
            var p = package ?? StreamPackage(streamID: a.streamID, tenant: a.tenant, name: a.streamName, renditions: [:],
                                             generation: resumption?.generation ?? StreamPackage.generation(at: Date()))
            p.ended = false
            for (name, rendition) in fresh {
                if p.renditions[name] != nil { p.renditions[name]!.reconfigure(rendition) } else { p.renditions[name] = rendition }
            }
            package = p
        }
        logger.info("packaging stream", metadata: ["stream": "\(key)", "renditions": "\(a.tracks.map(\.name))"])
    }

    private func nextSequence(_ key: String, _ rendition: String) -> Int {
        // Media sequence numbers start at 1: hls.js (1.6) only issues blocking reloads once the
        // playlist's last segment number is non-zero, so a stream starting at 0 waited a whole
        // target duration for its first reload and stalled.
        max(store.package(key)?.renditions[rendition]?.edge.lastSequence ?? 0, 0) + 1
    }

    private func unit(_ u: AccessUnit) {
        guard var stream = streams[u.streamID], var segmenter = stream.segmenters[u.trackID], let name = stream.names[u.trackID] else { return }
        unitsCounter.increment()
        stream.heard = true
        if stream.anchor == nil {
            // The stream's first unit: its time is now on the wall clock, for every rendition.
            let anchor = ClockAnchor(wallSeconds: Date().timeIntervalSince1970, streamSeconds: Double(u.dts) / Double(segmenter.track.timescale))
            stream.anchor = anchor
            for id in stream.segmenters.keys { stream.segmenters[id]?.clockAnchor = anchor }
            segmenter.clockAnchor = anchor
        }
        let (splices, dropped) = (segmenter.splices, segmenter.replayedUnitsDropped)
        let output = segmenter.append(u)
        if segmenter.splices > splices {
            splicesCounter.increment()
            logger.info("rendition spliced: a new transcoder continues the timeline", metadata: ["stream": "\(stream.key)", "rendition": "\(name)", "at_dts": "\(u.dts)"])
        }
        if segmenter.replayedUnitsDropped > dropped { replayDropped.increment(by: segmenter.replayedUnitsDropped - dropped) }
        stream.segmenters[u.trackID] = segmenter
        if !output.isEmpty { publish(output, rendition: name, key: stream.key) }
        if u.trackID == stream.referenceVideo { forwardVideoCut(output, timescale: segmenter.track.timescale, in: &stream) }
        streams[u.streamID] = stream
    }

    /// Audio cuts where the reference video did, on the same stream timeline.
    private func forwardVideoCut(_ output: SegmenterOutput, timescale: UInt32, in stream: inout Stream) {
        guard let segment = output.segment else { return }
        let end = Double(segment.startTime + segment.ticks) / Double(timescale)
        for (id, var audio) in stream.segmenters where audio.followsVideoCuts {
            let misaligned = audio.misalignedCuts
            let cut = audio.cut(atSeconds: end, endingSegment: segment.sequence)
            if audio.misalignedCuts > misaligned { misalignedCuts.increment() }
            stream.segmenters[id] = audio
            if let audioName = stream.names[id] { publish(cut, rendition: audioName, key: stream.key) }
        }
    }

    private func end(_ e: StreamEnd, at now: ContinuousClock.Instant) {
        guard var stream = streams.removeValue(forKey: e.streamID) else { return }
        lifecycle.ended(e.streamID, at: now)
        for (id, var segmenter) in stream.segmenters {
            if let name = stream.names[id] { publish(segmenter.finish(), rendition: name, key: stream.key) }
            stream.segmenters[id] = segmenter
        }
        store.update(stream.key) { package in
            package?.ended = true
            for name in package?.renditions.keys.map({ $0 }) ?? [] { package?.renditions[name]?.ended = true }
        }
        recorder?.streamEnded(key: stream.key, master: store.package(stream.key)?.multivariantPlaylist())
        logger.info("stream ended", metadata: ["stream": "\(stream.key)", "reason": "\(e.reason)"])
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
        let (window, dvrWindow) = (windowSegments, self.dvrWindow)
        var expired: [Int] = []
        let chunksOnly = output.parts.isEmpty && output.segment == nil
        var cursor: PackageCursor?
        store.update(key, chunksOnly: chunksOnly) { package in
            expired = package?.renditions[rendition]?.add(output, window: window, dvrWindow: dvrWindow) ?? []
            if output.segment != nil, let p = package, let r = p.renditions[rendition], let last = r.segments.last {
                cursor = PackageCursor(streamKey: key, rendition: rendition, generation: p.generation, lastSequence: last.sequence,
                                       discontinuitySequence: r.edgeDiscontinuitySequence, initVersion: r.initVersion)
            }
        }
        if let cursor { changedCursors[key + "/" + rendition] = cursor }
        dvr?.delete(key, rendition: rendition, sequences: expired)
    }
}
