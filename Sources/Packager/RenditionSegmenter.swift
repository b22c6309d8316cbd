import FMP4
import StorecastWire

/// A finished LL-HLS part of the segment being written: one or more CMAF chunks (`moof` +
/// `mdat`), its chunks back to back.
public struct PackagedPart: Sendable, Equatable {
    /// The media sequence number of the segment it belongs to, and its index there.
    public var sequence: Int
    public var index: Int
    public var duration: Double
    public var bytes: [UInt8]
    /// Starts with a sync sample (EXT-X-PART INDEPENDENT=YES).
    public var independent: Bool
    public var startTime: Int64
    public var ticks: Int64
    public var sampleCount: Int
    /// The segment it belongs to follows a discontinuity.
    public var discontinuity = false
}

/// A CMAF chunk of a part still being written: `offset` is where it sits in the part's bytes.
/// A preload-hinted part is streamed to waiting players chunk by chunk.
public struct PartChunk: Sendable, Equatable {
    public var sequence: Int
    public var index: Int
    public var offset: Int
    public var bytes: [UInt8]
}

/// Where a part sits inside its finished segment's bytes, so it stays servable without a copy.
public struct PartRange: Sendable, Equatable {
    public var duration: Double
    public var independent: Bool
    public var offset: Int
    public var length: Int
}

/// A finished CMAF segment of one rendition: its parts back to back.
public struct PackagedSegment: Sendable, Equatable {
    public var sequence: Int
    public var duration: Double
    public var bytes: [UInt8]
    public var discontinuity: Bool
    public var sampleCount: Int
    /// Decode time of the first sample and the segment's length, in the track's timescale.
    public var startTime: Int64 = 0
    public var ticks: Int64 = 0
    /// Wall-clock time of the first sample, seconds since 1970 (EXT-X-PROGRAM-DATE-TIME).
    public var programDateTime: Double?
    public var parts: [PartRange] = []
    /// The init segment version it was written against (`RenditionPackage.initVersion`).
    public var initVersion = 0
    /// Listed with EXT-X-GAP: media lost in a packager's restart (``ResumedGap``), no bytes.
    public var gap = false
}

/// What one unit produced: chunks of the open part, parts that became complete and, when a
/// segment closed, the segment. A part's last chunk comes only as the complete part.
public struct SegmenterOutput: Sendable, Equatable {
    public var chunks: [PartChunk] = []
    public var parts: [PackagedPart] = []
    public var segment: PackagedSegment?
    public var isEmpty: Bool { chunks.isEmpty && parts.isEmpty && segment == nil }
}

/// Where a stream's timeline meets the wall clock: stream time `streamSeconds` was packaged at
/// `wallSeconds` (since 1970). One per stream, shared by its renditions so their dates agree.
public struct ClockAnchor: Sendable, Equatable {
    public var wallSeconds: Double
    public var streamSeconds: Double
    public init(wallSeconds: Double, streamSeconds: Double) {
        self.wallSeconds = wallSeconds
        self.streamSeconds = streamSeconds
    }
}

/// Cuts one track's access units into LL-HLS parts and fMP4 segments. Pure.
///
/// **Segments**: video on keyframes once at least `minimumSegmentFraction` of the target has
/// elapsed, audio every target duration. **Parts**: a part closes before it would pass
/// `partTarget`, and a video keyframe always starts a new part, so parts that begin with one are
/// INDEPENDENT. A segment is its parts back to back. The segmenter holds one sample back
/// because a sample's duration is the distance to the next.
///
/// **Chunks.** With a `chunkTarget`, a part is written as CMAF chunks of about that length, each
/// handed out as soon as it is complete, so a player blocked on the preload-hinted part gets
/// its first frames before the part ends. Each chunk costs one `moof` (about 100 bytes); 0
/// writes a part as a single chunk.
///
/// **Splicing.** When a stream moves to another transcoder (failover or drain), the new worker
/// starts from ingest's GOP cache, so its first units repeat timestamps this segmenter already
/// has. Timestamps going back are a splice, not an error. Parts already published are never
/// changed, so video continues at the new worker's first keyframe at or after the end of what
/// was published: inside the part being written it replaces the rest of that part; otherwise
/// the old worker's last frame is held until the new worker's next keyframe (a freeze, not a
/// discontinuity). Replayed units before that point, and audio the segmenter already has, are
/// dropped. Chunks already handed out count as published.
public struct RenditionSegmenter: Sendable {
    public static let minimumSegmentFraction = 0.5

    public let track: TrackConfig
    public let targetDuration: Double
    public let partTarget: Double
    public let chunkTarget: Double
    private let partTargetTicks: Int64
    private let chunkTargetTicks: Int64
    private var partSamples: [FragmentSample] = []
    private var partStart: Int64?
    /// Chunks of the open part already handed out, and how many of its samples they hold.
    private var partChunks: [[UInt8]] = []
    private var chunkedSamples = 0
    /// Parts of the open segment already handed out.
    private var segmentParts: [PackagedPart] = []
    private var segmentStart: Int64?
    private var held: AccessUnit?
    private var nextSequence: Int
    private let firstSequence: Int
    private var nextFragment: UInt32 = 1
    private var discontinuityNext = false
    /// Set while splicing: video units are dropped until a keyframe at or after this time.
    private var spliceResume: Int64?
    /// Events the next chunk carries (`emsg` boxes before its `moof`).
    private var pendingEvents: [EventMessage] = []

    /// Times the timeline went back and was spliced, and units dropped as already packaged.
    public private(set) var splices = 0
    public private(set) var replayedUnitsDropped = 0

    /// Audio of a stream with video cuts where the video does (`cut(atSeconds:)`), so segment N
    /// of every rendition covers the same time: players that start each rendition at its own
    /// first segment (Chromium's native HLS appends in sequence mode) stay in sync. Without a
    /// video cut for `alignedFallback` targets, audio cuts by duration.
    public var followsVideoCuts = false
    public static let alignedFallback = 1.5
    /// The next video cut (this track's ticks) and the video segment it ends.
    private var alignedCut: (ticks: Int64, sequence: Int)?
    /// Set when the rendition has no segments yet: before anything is out, the first segment
    /// takes the number of the video segment it starts in, so segment N covers the same time.
    public var mayRenumberFirstSegment = false
    /// Video cuts that audio could not follow exactly: it had already handed out samples past
    /// the cut, so it cut at its first sample not yet out.
    public private(set) var misalignedCuts = 0
    /// Video cuts skipped because audio already had a segment more (it had cut by duration).
    public private(set) var skippedCuts = 0

    public init(track: TrackConfig, targetDuration: Double, partTarget: Double = 1.0 / 3.0, chunkTarget: Double = 0, firstSequence: Int = 0) {
        self.track = track
        self.targetDuration = targetDuration
        self.partTarget = partTarget
        self.chunkTarget = chunkTarget
        self.partTargetTicks = Int64((partTarget * Double(track.timescale)).rounded())
        self.chunkTargetTicks = Int64((chunkTarget * Double(track.timescale)).rounded())
        self.nextSequence = firstSequence
        self.firstSequence = firstSequence
    }

    /// The shortest of the first two segments (seconds) a video keyframe may close: a show's
    /// first segment ends at the transcoder's fast-start keyframe (``KeyframeCadence``) instead
    /// of a GOP later, so players waiting for it get a playlist sooner, and the second ends at
    /// the next GOP keyframe however soon it comes (the fast start is timed from the first
    /// frame, the GOP grid from the stream clock), so no segment grows past the target. Nil:
    /// as any other.
    public var startMinimum: Double?

    /// Set once the stream's first unit arrived; segments then carry a program date-time.
    public var clockAnchor: ClockAnchor?

    public var isVideo: Bool { track.kind == .video }

    /// Carries an ID3 tag in band: an `emsg` (``EventMessage``, the AOM ID3 scheme) starting at
    /// `wallSeconds` (seconds since 1970) on this track's timeline, through the stream's clock
    /// anchor, as PROGRAM-DATE-TIME maps it. It goes into the next chunk written that does not
    /// end before that time; as the scheme requires its time to fall within that chunk, a time
    /// already written moves to the chunk's start (``EventMessage/starting(atOrAfter:)``).
    /// False when nothing is anchored yet or the time falls before the timeline's start.
    public mutating func carry(id3 tag: [UInt8], id: UInt32, wallSeconds: Double, duration: Double?) -> Bool {
        guard let anchor = clockAnchor else { return false }
        let scale = Double(track.timescale)
        let ticks = ((wallSeconds - anchor.wallSeconds + anchor.streamSeconds) * scale).rounded()
        guard ticks.isFinite, ticks >= 0, ticks < 0x1p63 else { return false }
        let length = duration.map { ($0 * scale).rounded() }
        let eventDuration = length.flatMap { $0.isFinite && $0 >= 0 && $0 < Double(EventMessage.unknownDuration) ? UInt32($0) : nil } ?? EventMessage.unknownDuration
        pendingEvents.append(EventMessage(schemeIdURI: EventMessage.id3Scheme, timescale: track.timescale, presentationTime: UInt64(ticks),
                                          eventDuration: eventDuration, id: id, messageData: tag))
        return true
    }

    /// Marks the next segment as following a discontinuity (a video cut still pending belongs
    /// to the old timeline).
    public mutating func markDiscontinuity() {
        discontinuityNext = true
        alignedCut = nil
    }

    public mutating func append(_ unit: AccessUnit) -> SegmenterOutput {
        var out = SegmenterOutput()
        if let previous = held, unit.dts <= previous.dts || spliceResume != nil {
            if spliceResume == nil { splices += 1 }
            splice(unit, previous: previous, into: &out)
        } else {
            appendInOrder(unit, into: &out)
        }
        return out
    }

    private var partTicks: Int64 { partSamples.reduce(0) { $0 + Int64($1.duration) } }
    private var chunkedTicks: Int64 { partSamples[..<chunkedSamples].reduce(0) { $0 + Int64($1.duration) } }
    /// Where what is not out yet begins: the open part after its chunks, else the held sample.
    private func unpublishedStart(held: AccessUnit) -> Int64 { partStart.map { $0 + chunkedTicks } ?? held.dts }

    private mutating func appendInOrder(_ unit: AccessUnit, into out: inout SegmenterOutput) {
        guard let previous = held else {
            guard !isVideo || unit.isKeyframe else { return }  // a video segment starts with a keyframe
            if let pending = alignedCut {
                // Audio's first unit after video already cut: a cut behind it is dropped, and
                // before anything is out the segment is numbered like the video one it is in.
                let fresh = mayRenumberFirstSegment && nextSequence == firstSequence && segmentParts.isEmpty
                if unit.dts >= pending.ticks {
                    alignedCut = nil
                    if fresh { nextSequence = max(firstSequence, pending.sequence + 1) }
                } else if fresh {
                    nextSequence = max(firstSequence, pending.sequence)
                }
            }
            held = unit
            return
        }
        let duration = Int64(max(0, unit.dts - previous.dts))
        let sample = FragmentSample(duration: UInt32(clamping: duration), compositionOffset: previous.compositionOffset, isSync: previous.isKeyframe || !isVideo, data: previous.data)
        // A keyframe starts a part, and a sample that would overflow the part starts the next one.
        if !partSamples.isEmpty, (isVideo && previous.isKeyframe) || partTicks + duration > partTargetTicks { closePart(into: &out) }
        if segmentStart == nil { segmentStart = previous.dts }
        if partStart == nil { partStart = previous.dts }
        partSamples.append(sample)
        let elapsed = Double(unit.dts - (segmentStart ?? unit.dts)) / Double(track.timescale)
        let cut: Bool
        if isVideo {
            let ordinary = targetDuration * Self.minimumSegmentFraction
            cut = unit.isKeyframe && elapsed >= (nextSequence < firstSequence + 2 ? startMinimum ?? ordinary : ordinary)
        } else if followsVideoCuts {
            cut = alignedCut.map { unit.dts >= $0.ticks } ?? (elapsed >= targetDuration * Self.alignedFallback)
        } else {
            cut = elapsed >= targetDuration
        }
        if cut {
            alignedCut = nil
            closePart(into: &out)
            out.segment = closeSegment()
        } else if partTicks + duration > partTargetTicks {
            closePart(into: &out)  // the next sample of the same length would not fit: publish now
        } else if chunkTargetTicks > 0, partTicks - chunkedTicks >= chunkTargetTicks {
            out.chunks.append(flushChunk())
        }
        held = unit
    }

    /// The stream's video closed a segment at `seconds` (this track's timeline, in seconds): an
    /// audio segmenter that follows video cuts ends its segment before its first sample at or
    /// after that time, now if it is already there, else when it gets there.
    public mutating func cut(atSeconds seconds: Double, endingSegment sequence: Int) -> SegmenterOutput {
        var out = SegmenterOutput()
        guard !isVideo, followsVideoCuts else { return out }
        let t = Int64((seconds * Double(track.timescale)).rounded())
        if held != nil, nextSequence > sequence {
            // Audio already has a segment more (it cut by duration while video was missing):
            // leaving this cut out lines the numbers up again.
            skippedCuts += 1
            alignedCut = nil
            return out
        }
        if held != nil, nextSequence < sequence { misalignedCuts += 1 }  // audio is a segment behind: the numbers stay one apart
        guard let held, held.dts >= t else {
            alignedCut = (t, sequence)
            return out
        }
        alignedCut = nil
        // Nothing before the held sample (it starts the next segment anyway), or the segment
        // already starts after the cut (audio cut by duration while video was missing).
        guard let start = segmentStart, t > start else { return out }
        // The open part's samples not yet out as chunks can still move to the next segment:
        // from the first of them at or after the cut (`movedStart` is where it begins).
        if t < unpublishedStart(held: held) { misalignedCuts += 1 }
        var movedStart = partStart ?? held.dts
        var index = partSamples.count
        for (i, sample) in partSamples.enumerated() {
            if i >= chunkedSamples, movedStart >= t { index = i; break }
            movedStart += Int64(sample.duration)
        }
        let moved = Array(partSamples[index...])
        partSamples.removeLast(moved.count)
        closePart(into: &out)
        partStart = nil  // closePart leaves it when nothing was left to close
        out.segment = closeSegment()
        if !moved.isEmpty {
            segmentStart = movedStart
            partStart = movedStart
            partSamples = moved
        }
        return out
    }

    /// Closes the open segment (end of stream); the held sample gets the previous duration.
    public mutating func finish() -> SegmenterOutput {
        var out = SegmenterOutput()
        if let last = held {
            if segmentStart == nil { segmentStart = last.dts }
            if partStart == nil { partStart = last.dts }
            let duration = partSamples.last?.duration ?? UInt32(track.timescale / 30)
            partSamples.append(FragmentSample(duration: duration, compositionOffset: last.compositionOffset, isSync: last.isKeyframe || !isVideo, data: last.data))
            held = nil
        }
        closePart(into: &out)
        out.segment = closeSegment()
        spliceResume = nil
        alignedCut = nil
        return out
    }

    /// A unit from a worker that took the stream over; `previous` is the held sample.
    private mutating func splice(_ unit: AccessUnit, previous: AccessUnit, into out: inout SegmenterOutput) {
        guard isVideo else {
            // Audio needs no keyframe: skip what is already here, continue after it (one splice
            // however many units are skipped).
            guard unit.dts > previous.dts else {
                spliceResume = previous.dts
                replayedUnitsDropped += 1
                return
            }
            spliceResume = nil
            appendInOrder(unit, into: &out)
            return
        }
        let unpublished = unpublishedStart(held: previous)
        spliceResume = unpublished
        guard unit.isKeyframe, unit.dts >= unpublished else { replayedUnitsDropped += 1; return }
        spliceResume = nil
        if unit.dts > previous.dts {  // past everything held: a plain continuation
            appendInOrder(unit, into: &out)
            return
        }
        // Cut where the new worker's keyframe starts; what the old one had from there on is replaced.
        var kept: [FragmentSample] = []
        var dts = partStart ?? previous.dts
        for (i, sample) in partSamples.enumerated() where i < chunkedSamples || dts < unit.dts {
            var sample = sample
            if i >= chunkedSamples { sample.duration = UInt32(clamping: min(Int64(sample.duration), unit.dts - dts)) }  // chunks are out as they are
            kept.append(sample)
            dts += Int64(sample.duration)
        }
        replayedUnitsDropped += partSamples.count - kept.count + 1  // the dropped tail and the held sample
        partSamples = kept
        held = unit
        closePart(into: &out)
        out.segment = closeSegment()  // nil when nothing of it was kept
    }

    /// Writes the open part's samples not yet in a chunk as the next chunk.
    private mutating func flushChunk() -> PartChunk {
        let start = (partStart ?? 0) + chunkedTicks
        let samples = Array(partSamples[chunkedSamples...])
        let (from, end) = (UInt64(max(0, start)), UInt64(max(0, start + samples.reduce(0) { $0 + Int64($1.duration) })))
        let events = pendingEvents.filter { $0.presentationTime < end }.compactMap { $0.starting(atOrAfter: from) }
        pendingEvents.removeAll { $0.presentationTime < end }
        let bytes = MediaFragment.make(sequenceNumber: nextFragment, baseMediaDecodeTime: from, samples: samples, events: events)
        nextFragment &+= 1
        let chunk = PartChunk(sequence: nextSequence, index: segmentParts.count, offset: partChunks.reduce(0) { $0 + $1.count }, bytes: bytes)
        partChunks.append(bytes)
        chunkedSamples = partSamples.count
        return chunk
    }

    private mutating func closePart(into out: inout SegmenterOutput) {
        guard let start = partStart, !partSamples.isEmpty else { return }
        if chunkedSamples < partSamples.count { _ = flushChunk() }
        let ticks = partTicks
        let part = PackagedPart(
            sequence: nextSequence, index: segmentParts.count, duration: Double(ticks) / Double(track.timescale),
            bytes: partChunks.count == 1 ? partChunks[0] : partChunks.flatMap { $0 },
            independent: partSamples[0].isSync, startTime: start, ticks: ticks, sampleCount: partSamples.count, discontinuity: discontinuityNext)
        segmentParts.append(part)
        out.parts.append(part)
        partSamples = []
        partChunks = []
        chunkedSamples = 0
        partStart = nil
    }

    private mutating func closeSegment() -> PackagedSegment? {
        defer { segmentParts = []; segmentStart = nil }
        guard let start = segmentStart, !segmentParts.isEmpty else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(segmentParts.reduce(0) { $0 + $1.bytes.count })
        var ranges: [PartRange] = []
        for p in segmentParts {
            ranges.append(PartRange(duration: p.duration, independent: p.independent, offset: bytes.count, length: p.bytes.count))
            bytes += p.bytes
        }
        let total = segmentParts.reduce(0) { $0 + $1.ticks }
        let samples = segmentParts.reduce(0) { $0 + $1.sampleCount }
        let segment = PackagedSegment(
            sequence: nextSequence, duration: Double(total) / Double(track.timescale), bytes: bytes, discontinuity: discontinuityNext, sampleCount: samples,
            startTime: start, ticks: total,
            programDateTime: clockAnchor.map { $0.wallSeconds + Double(start) / Double(track.timescale) - $0.streamSeconds }, parts: ranges)
        nextSequence += 1
        discontinuityNext = false
        return segment
    }
}
