import FMP4
import StorecastWire

/// A finished CMAF segment of one rendition.
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

/// Cuts one track's access units into fMP4 segments: video on keyframes once at least
/// `minimumSegmentFraction` of the target has elapsed, audio every target duration. Holds one
/// sample back because a sample's duration is the distance to the next. Pure.
///
/// **Splicing.** When a stream moves to another transcoder (failover or drain), the new worker
/// starts from ingest's GOP cache, so its first units repeat timestamps this segmenter already
/// has. Timestamps going back are a splice, not an error: video cuts the open segment at the new
/// worker's first keyframe that falls inside it (keyframes sit at the same stream times on every
/// worker, see `KeyframeCadence`), so the timeline continues without a discontinuity; replayed
/// units before that point, and audio the segmenter already has, are dropped.
public struct RenditionSegmenter: Sendable {
    public static let minimumSegmentFraction = 0.5

    public let track: TrackConfig
    public let targetDuration: Double
    private var pending: [FragmentSample] = []
    private var pendingStart: Int64?
    private var held: AccessUnit?
    private var nextSequence: Int
    private var discontinuityNext = false
    /// Set while splicing: video units are dropped until a keyframe at or after this time.
    private var spliceResume: Int64?

    /// Times the timeline went back and was spliced, and units dropped as already packaged.
    public private(set) var splices = 0
    public private(set) var replayedUnitsDropped = 0

    public init(track: TrackConfig, targetDuration: Double, firstSequence: Int = 0) {
        self.track = track
        self.targetDuration = targetDuration
        self.nextSequence = firstSequence
    }

    /// Set once the stream's first unit arrived; segments then carry a program date-time.
    public var clockAnchor: ClockAnchor?

    public var isVideo: Bool { track.kind == .video }

    /// Marks the next segment as following a discontinuity.
    public mutating func markDiscontinuity() { discontinuityNext = true }

    public mutating func append(_ unit: AccessUnit) -> PackagedSegment? {
        if let previous = held, unit.dts <= previous.dts || spliceResume != nil {
            if spliceResume == nil { splices += 1 }
            return splice(unit, previous: previous)
        }
        return appendInOrder(unit)
    }

    private mutating func appendInOrder(_ unit: AccessUnit) -> PackagedSegment? {
        var finished: PackagedSegment?
        if let previous = held {
            let duration = max(0, unit.dts - previous.dts)
            if pendingStart == nil { pendingStart = previous.dts }
            pending.append(FragmentSample(duration: UInt32(clamping: duration), compositionOffset: previous.compositionOffset, isSync: previous.isKeyframe || !isVideo, data: previous.data))
            let elapsed = Double(unit.dts - (pendingStart ?? unit.dts)) / Double(track.timescale)
            let cut = isVideo ? unit.isKeyframe && elapsed >= targetDuration * Self.minimumSegmentFraction : elapsed >= targetDuration
            if cut { finished = flush() }
        } else if isVideo && !unit.isKeyframe {
            return nil  // a video segment must start with a keyframe
        }
        held = unit
        return finished
    }

    /// Closes the open segment (end of stream); the held sample gets the previous duration.
    public mutating func finish() -> PackagedSegment? {
        if let last = held {
            if pendingStart == nil { pendingStart = last.dts }
            let duration = pending.last?.duration ?? UInt32(track.timescale / 30)
            pending.append(FragmentSample(duration: duration, compositionOffset: last.compositionOffset, isSync: last.isKeyframe || !isVideo, data: last.data))
            held = nil
        }
        return flush()
    }

    /// A unit from a worker that took the stream over; `previous` is the held sample.
    private mutating func splice(_ unit: AccessUnit, previous: AccessUnit) -> PackagedSegment? {
        guard isVideo else {
            // Audio needs no keyframe: skip what is already here, continue after it.
            guard unit.dts > previous.dts else { replayedUnitsDropped += 1; return nil }
            spliceResume = nil
            return appendInOrder(unit)
        }
        let segmentStart = pendingStart ?? previous.dts
        spliceResume = segmentStart
        guard unit.isKeyframe, unit.dts >= segmentStart else { replayedUnitsDropped += 1; return nil }
        spliceResume = nil
        if unit.dts > previous.dts { return appendInOrder(unit) }  // past everything held: a plain continuation
        // Cut the open segment where the new worker's keyframe starts; what it had from there on
        // is replaced by the new worker's units.
        var kept: [FragmentSample] = []
        var dts = segmentStart
        for sample in pending where dts < unit.dts {
            var sample = sample
            sample.duration = UInt32(clamping: min(Int64(sample.duration), unit.dts - dts))
            kept.append(sample)
            dts += Int64(sample.duration)
        }
        replayedUnitsDropped += pending.count - kept.count + 1  // the dropped tail and the held sample
        pending = kept
        held = unit
        guard !pending.isEmpty else {
            pendingStart = nil
            return nil
        }
        return flush()
    }

    private mutating func flush() -> PackagedSegment? {
        guard let start = pendingStart, !pending.isEmpty else { return nil }
        let sequence = nextSequence
        nextSequence += 1
        let bytes = MediaFragment.make(sequenceNumber: UInt32(truncatingIfNeeded: sequence + 1), baseMediaDecodeTime: UInt64(max(0, start)), samples: pending)
        let total = pending.reduce(0) { $0 + Int64($1.duration) }
        let segment = PackagedSegment(sequence: sequence, duration: Double(total) / Double(track.timescale), bytes: bytes, discontinuity: discontinuityNext, sampleCount: pending.count, startTime: start, ticks: total,
                                      programDateTime: clockAnchor.map { $0.wallSeconds + Double(start) / Double(track.timescale) - $0.streamSeconds })
        discontinuityNext = false
        pending = []
        pendingStart = nil
        return segment
    }
}
