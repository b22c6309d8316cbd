import Foundation
import HLS
import StorecastWire

/// The packager's decisions for the renditions of its live streams, as a decider: which
/// segmenter each unit goes to, where a timeline breaks (reconnect, failover, a changed track),
/// which renditions an announce retires, where numbering continues (after what is listed, or
/// after a restart), and where audio cuts. It owns the segmenters; the shell
/// (``PackagingPipeline``) hands it what its store lists and the wall clock, and carries out the
/// actions: the store, the recorder, DVR, cursors, metrics and logs.
struct StreamPackager {
    struct Configuration: Sendable {
        var targetDuration: Double
        var partTarget: Double
        var chunkTarget: Double
    }

    enum Action {
        /// A stream this packager had not seen (a show starting, or starting again).
        case started(streamID: Int64, key: String, tenant: String, stream: String)
        /// A package served before this packager restarted is continued.
        case resumed(key: String, generation: String)
        /// What a segmenter finished: list it (and record and archive the segment).
        case publish(SegmenterOutput, rendition: String, key: String)
        /// Renditions the announce left out: ended, and gone from the multivariant playlist.
        case retire(key: String, renditions: [String])
        /// A track that cannot be packaged (its configuration does not parse).
        case refusedTrack(key: String, rendition: String, error: String)
        /// The package's new or changed renditions; a package that does not exist yet is made
        /// with `generation`. The package is live again.
        case install(key: String, streamID: Int64, tenant: String, name: String, renditions: [String: RenditionPackage], generation: String)
        case packaging(key: String, renditions: [String])
        /// A new transcoder continues the rendition's timeline.
        case spliced(key: String, rendition: String, dts: Int64)
        case replayedUnitsDropped(Int)
        case audioCutsMisaligned(Int)
        case ended(key: String, reason: String)
    }

    struct Stream {
        var key: String
        var segmenters: [UInt8: RenditionSegmenter] = [:]
        var names: [UInt8: String] = [:]
        var anchor: ClockAnchor?
        /// The ladder rung whose segment cuts the audio follows (the ladder's keyframes are
        /// aligned, so any rung will do; the passed-through source has the publisher's own).
        var referenceVideo: UInt8?
        /// Media came since the last ``takeHeard()`` (``StreamLifecycle`` decides on silence).
        var heard = false
        /// The last announce taken: the transcoder repeats it at every keyframe (so a packager
        /// that restarted picks the stream up), and a repeat changes nothing.
        var announce: StreamAnnounce?
        /// The product cards already carried in band (``InBandCards``), by date range ID.
        var carried: Set<String> = []
        /// When this packager began packaging the stream's current session (seconds since
        /// 1970): cards that started before it are not carried (``carry(_:key:)``).
        var since: Double = 0
    }

    let configuration: Configuration
    private(set) var streams: [Int64: Stream] = [:]

    init(configuration: Configuration) {
        self.configuration = configuration
    }

    func key(of streamID: Int64) -> String? { streams[streamID]?.key }

    /// The keys of the streams being packaged.
    var keys: [String] { streams.values.map(\.key) }

    /// Product cards of the stream under `key` (its package's date ranges): each one not carried
    /// yet goes in band into every video rendition (``InBandCards``,
    /// ``RenditionSegmenter/carry(id3:id:wallSeconds:duration:)``). A card that started before
    /// this packager began packaging the stream's current session is passed over: a restarted
    /// packager's list (the process before it carried those) or the previous show's cards, which
    /// the package can still list for a moment. One that cannot be placed yet (nothing
    /// anchored) waits for the next call. Returns the cards carried.
    mutating func carry(_ cards: [DateRange], key: String) -> [String] {
        guard let id = streams.first(where: { $0.value.key == key })?.key, var stream = streams[id] else { return [] }
        var carried: [String] = []
        for card in cards where !stream.carried.contains(card.id) {
            guard card.startDate >= stream.since, let tag = InBandCards.tag(card) else {
                stream.carried.insert(card.id)
                continue
            }
            var placed = false
            for track in stream.segmenters.keys.sorted() where stream.segmenters[track]?.isVideo == true {
                if stream.segmenters[track]?.carry(id3: tag, id: InBandCards.eventID(card), wallSeconds: card.startDate, duration: card.duration) == true { placed = true }
            }
            guard placed else { continue }
            stream.carried.insert(card.id)
            carried.append(card.id)
        }
        stream.carried.formIntersection(cards.map(\.id))  // the package lists a show's recent cards only
        streams[id] = stream
        return carried
    }

    /// The streams that sent something since the last call.
    mutating func takeHeard() -> Set<Int64> {
        var heard: Set<Int64> = []
        for i in streams.indices where streams.values[i].heard {
            heard.insert(streams.keys[i])
            streams.values[i].heard = false
        }
        return heard
    }

    /// An announce (already claimed by ``StreamLifecycle``). `listed` is the last segment number
    /// of each rendition the store lists under the stream's key (nil: no package); `resumption`
    /// a package this packager served before it restarted (used only when none is listed).
    mutating func announce(_ a: StreamAnnounce, listed stored: [String: Int]?, resumption offered: PackageResumption?, wallClock: Date) -> [Action] {
        let key = PackageStore.key(tenant: a.tenant, stream: a.streamName)
        let starting = streams[a.streamID] == nil
        if !starting, !a.discontinuity, streams[a.streamID]?.announce == a { return [] }  // the transcoder's repeat
        var actions: [Action] = []
        if starting { actions.append(.started(streamID: a.streamID, key: key, tenant: a.tenant, stream: a.streamName)) }
        var stream = streams[a.streamID] ?? Stream(key: key)
        if starting || stream.announce?.sessionID != a.sessionID {
            stream.since = wallClock.timeIntervalSince1970
            stream.carried = []
        }
        stream.heard = true
        stream.announce = a
        // What is listed, kept current as this announce publishes.
        var listed = stored ?? [:]
        func publish(_ output: SegmenterOutput, _ rendition: String) {
            guard !output.isEmpty else { return }
            if let segment = output.segment { listed[rendition] = segment.sequence }
            actions.append(.publish(output, rendition: rendition, key: key))
        }
        func misaligned(_ n: Int) { if n > 0 { actions.append(.audioCutsMisaligned(n)) } }
        let resumption = starting && stored == nil ? offered : nil
        if let resumption {
            actions.append(.resumed(key: key, generation: resumption.generation))
            // The same stream time on the same wall clock as before the restart.
            if stream.anchor == nil { stream.anchor = resumption.clockAnchor }
        }
        if a.discontinuity {
            // The timeline jumps (publisher reconnect, failover): close every open segment and
            // start the next ones with EXT-X-DISCONTINUITY.
            for id in stream.segmenters.keys.sorted() {
                guard var segmenter = stream.segmenters[id] else { continue }
                if let name = stream.names[id] { publish(segmenter.finish(), name) }
                segmenter.markDiscontinuity()
                stream.segmenters[id] = segmenter
            }
        }
        // Renditions the new announce leaves out (the transcoder shed them, or a new worker plans
        // a smaller ladder) end here and leave the multivariant playlist.
        let kept = Set(a.tracks.map(\.trackID))
        var retired: [String] = []
        for id in stream.segmenters.keys.sorted() where !kept.contains(id) {
            guard var segmenter = stream.segmenters[id], let name = stream.names[id] else { continue }
            let last = segmenter.finish()
            publish(last, name)
            if id == stream.referenceVideo { misaligned(forwardVideoCut(last, timescale: segmenter.track.timescale, in: &stream, publish)) }
            stream.segmenters[id] = nil
            stream.names[id] = nil
            retired.append(name)
        }
        if !retired.isEmpty { actions.append(.retire(key: key, renditions: retired.sorted())) }
        var fresh: [String: RenditionPackage] = [:]
        for track in a.tracks {
            if let existing = stream.segmenters[track.trackID], existing.track == track { continue }
            do {
                fresh[track.name] = try RenditionPackage(track: track)
            } catch {
                actions.append(.refusedTrack(key: key, rendition: track.name, error: "\(error)"))
                continue
            }
            // A changed track (new resolution or codec configuration): what the old segmenter
            // holds is published first, so the open segment and its parts are complete.
            if var old = stream.segmenters[track.trackID], let oldName = stream.names[track.trackID] {
                let last = old.finish()
                publish(last, oldName)
                if track.trackID == stream.referenceVideo { misaligned(forwardVideoCut(last, timescale: old.track.timescale, in: &stream, publish)) }
            }
            // Media sequence numbers start at 1: hls.js (1.6) only issues blocking reloads once
            // the playlist's last segment number is non-zero, so a stream starting at 0 waited a
            // whole target duration for its first reload and stalled.
            let next = max(listed[track.name] ?? 0, 0) + 1
            var segmenter = RenditionSegmenter(track: track, targetDuration: configuration.targetDuration, partTarget: configuration.partTarget,
                                               chunkTarget: configuration.chunkTarget,
                                               firstSequence: resumption?.firstSequence(track.name, wallClock: wallClock.timeIntervalSince1970, targetDuration: configuration.targetDuration) ?? next)
            if let cc = resumption?.discontinuitySequence(track.name) {
                fresh[track.name]?.discontinuitySequence = cc
                fresh[track.name]?.initVersion = resumption?.initVersion(track.name) ?? 0
                if let gap = resumption?.gap(track.name), let anchor = stream.anchor { fresh[track.name]?.resumedGap = (gap, anchor) }
                segmenter.markDiscontinuity()
            }
            segmenter.clockAnchor = stream.anchor
            // A starting show's first segments may end at the transcoder's fast-start keyframe
            // (the passed-through source keeps the publisher's keyframes).
            if starting, !track.isSource { segmenter.startMinimum = min(configuration.partTarget, configuration.targetDuration / 6) }
            // A new session on a package still in memory (the last show ended within the
            // retention) starts its timeline over after what is listed.
            let continuesPackage = starting && (listed[track.name] ?? -1) >= 0
            if stream.segmenters[track.trackID] != nil || a.discontinuity || continuesPackage { segmenter.markDiscontinuity() }
            stream.segmenters[track.trackID] = segmenter
            stream.names[track.trackID] = track.name
        }
        let videos = a.tracks.filter { $0.kind == .video }
        stream.referenceVideo = (videos.filter { !$0.isSource }.min { $0.trackID < $1.trackID } ?? videos.min { $0.trackID < $1.trackID })?.trackID
        for track in a.tracks where track.kind == .audio { stream.segmenters[track.trackID]?.followsVideoCuts = stream.referenceVideo != nil }
        for track in a.tracks where track.kind == .audio && fresh[track.name] != nil {
            // A new audio segmenter of a rendition with nothing listed may number its first segment.
            stream.segmenters[track.trackID]?.mayRenumberFirstSegment = (listed[track.name] ?? -1) < 1
        }
        streams[a.streamID] = stream
        actions.append(.install(key: key, streamID: a.streamID, tenant: a.tenant, name: a.streamName, renditions: fresh,
                                generation: resumption?.generation ?? StreamPackage.generation(at: wallClock)))
        actions.append(.packaging(key: key, renditions: a.tracks.map(\.name)))
        return actions
    }

    /// A unit of an announced rendition; nil for any other (dropped). `wallClock` is read once,
    /// for a stream's first unit: its time on the wall clock anchors PROGRAM-DATE-TIME.
    mutating func unit(_ u: AccessUnit, wallClock: () -> Date) -> [Action]? {
        guard var stream = streams[u.streamID], var segmenter = stream.segmenters[u.trackID], let name = stream.names[u.trackID] else { return nil }
        stream.heard = true
        if stream.anchor == nil {
            let anchor = ClockAnchor(wallSeconds: wallClock().timeIntervalSince1970, streamSeconds: Double(u.dts) / Double(segmenter.track.timescale))
            stream.anchor = anchor
            for id in stream.segmenters.keys { stream.segmenters[id]?.clockAnchor = anchor }
            segmenter.clockAnchor = anchor
        }
        var actions: [Action] = []
        let (splices, dropped) = (segmenter.splices, segmenter.replayedUnitsDropped)
        let output = segmenter.append(u)
        if segmenter.splices > splices { actions.append(.spliced(key: stream.key, rendition: name, dts: u.dts)) }
        if segmenter.replayedUnitsDropped > dropped { actions.append(.replayedUnitsDropped(segmenter.replayedUnitsDropped - dropped)) }
        stream.segmenters[u.trackID] = segmenter
        if !output.isEmpty { actions.append(.publish(output, rendition: name, key: stream.key)) }
        if u.trackID == stream.referenceVideo {
            let key = stream.key
            var cuts: [Action] = []
            let misaligned = forwardVideoCut(output, timescale: segmenter.track.timescale, in: &stream) { cuts.append(.publish($0, rendition: $1, key: key)) }
            actions += cuts
            if misaligned > 0 { actions.append(.audioCutsMisaligned(misaligned)) }
        }
        streams[u.streamID] = stream
        return actions
    }

    /// The stream ended: every open segment is published, and the package is over.
    mutating func end(_ e: StreamEnd) -> [Action] {
        guard var stream = streams.removeValue(forKey: e.streamID) else { return [] }
        var actions: [Action] = []
        for id in stream.segmenters.keys.sorted() {
            guard var segmenter = stream.segmenters[id] else { continue }
            if let name = stream.names[id] {
                let last = segmenter.finish()
                if !last.isEmpty { actions.append(.publish(last, rendition: name, key: stream.key)) }
            }
            stream.segmenters[id] = segmenter
        }
        actions.append(.ended(key: stream.key, reason: e.reason))
        return actions
    }

    /// Audio cuts where the reference video did, on the same stream timeline. Returns how many
    /// of those cuts could not land on the video's time.
    private func forwardVideoCut(_ output: SegmenterOutput, timescale: UInt32, in stream: inout Stream, _ publish: (SegmenterOutput, String) -> Void) -> Int {
        guard let segment = output.segment else { return 0 }
        let end = Double(segment.startTime + segment.ticks) / Double(timescale)
        var misaligned = 0
        for id in stream.segmenters.keys.sorted() {
            guard var audio = stream.segmenters[id], audio.followsVideoCuts else { continue }
            let before = audio.misalignedCuts
            let cut = audio.cut(atSeconds: end, endingSegment: segment.sequence)
            misaligned += audio.misalignedCuts - before
            stream.segmenters[id] = audio
            if let audioName = stream.names[id], !cut.isEmpty { publish(cut, audioName) }
        }
        return misaligned
    }
}
