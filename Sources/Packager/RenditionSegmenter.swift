import FMP4
import StorecastWire

/// A finished CMAF segment of one rendition.
public struct PackagedSegment: Sendable, Equatable {
    public var sequence: Int
    public var duration: Double
    public var bytes: [UInt8]
    public var discontinuity: Bool
    public var sampleCount: Int
}

/// Cuts one track's access units into fMP4 segments: video on keyframes once at least
/// `minimumSegmentFraction` of the target has elapsed, audio every target duration. Holds one
/// sample back because a sample's duration is the distance to the next. Pure.
public struct RenditionSegmenter: Sendable {
    public static let minimumSegmentFraction = 0.5

    public let track: TrackConfig
    public let targetDuration: Double
    private var pending: [FragmentSample] = []
    private var pendingStart: Int64?
    private var held: AccessUnit?
    private var nextSequence: Int
    private var discontinuityNext = false

    public init(track: TrackConfig, targetDuration: Double, firstSequence: Int = 0) {
        self.track = track
        self.targetDuration = targetDuration
        self.nextSequence = firstSequence
    }

    public var isVideo: Bool { track.kind == .video }

    /// Marks the next segment as following a discontinuity.
    public mutating func markDiscontinuity() { discontinuityNext = true }

    public mutating func append(_ unit: AccessUnit) -> PackagedSegment? {
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

    private mutating func flush() -> PackagedSegment? {
        guard let start = pendingStart, !pending.isEmpty else { return nil }
        let sequence = nextSequence
        nextSequence += 1
        let bytes = MediaFragment.make(sequenceNumber: UInt32(truncatingIfNeeded: sequence + 1), baseMediaDecodeTime: UInt64(max(0, start)), samples: pending)
        let total = pending.reduce(0) { $0 + Int64($1.duration) }
        let segment = PackagedSegment(sequence: sequence, duration: Double(total) / Double(track.timescale), bytes: bytes, discontinuity: discontinuityNext, sampleCount: pending.count)
        discontinuityNext = false
        pending = []
        pendingStart = nil
        return segment
    }
}
