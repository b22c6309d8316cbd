/// Keeps one stream's ladder in real time without taking a rendition from its viewers. A pure
/// decider: the stream's thread reports what it did and when (the clock is a parameter), and
/// carries out the actions returned.
///
/// **What counts as behind.** Only work queued at this worker: a video unit's arrival at the
/// worker against the moment its encode is done. A publisher that goes quiet (a stalled phone,
/// an app in the background, a reconnect) or whose timestamps jump sends nothing to queue, so it
/// is never lag; the stream time of the frames plays no part.
///
/// **How it catches up.** Every rung always keeps encoding, in step (a player only reloads the
/// media playlist it is on, so a rung that stopped would freeze its viewers):
/// 1. behind by more than ``Limits/behindAfter``: skip the queued video up to the newest
///    queued keyframe (at most once per ``Limits/skipHoldOff``; the shell reports each attempt
///    with ``skipped(at:)``, made or not: with no keyframe queued, a long GOP, only thinning helps);
/// 2. ``Limits/skipsToThin`` skips within ``Limits/sustainedWindow``: the worker cannot carry the
///    stream at full frame rate, so every rung encodes one frame in two (then three), keyframes
///    always included;
/// 3. lag under ``Limits/recoveredBelow`` for ``Limits/recoverAfter``: one step back towards
///    every frame (as a mobile encoder raises its bitrate after 20 s of good network).
public struct LadderRealTimePolicy: Sendable, Equatable {
    public struct Limits: Sendable, Equatable {
        /// Seconds of queued work before queued frames are skipped.
        public var behindAfter = 1.0
        /// Seconds between two skips at the least.
        public var skipHoldOff = 2.0
        /// Skips within ``sustainedWindow`` that thin the frame rate.
        public var skipsToThin = 3
        public var sustainedWindow = 30.0
        /// Lag below this for ``recoverAfter`` seconds restores one frame-rate step.
        public var recoveredBelow = 0.25
        public var recoverAfter = 20.0
        /// The most the frame rate is divided by.
        public var maximumFrameStep = 3
        public init() {}
    }

    public enum Action: Sendable, Equatable {
        /// Drop the queued video before the newest queued keyframe (audio stays).
        case skipToNewestKeyframe
        /// Encode one decoded frame in `n` in every rung (1: every frame), keyframes always.
        case frameStep(Int)
    }

    public let limits: Limits
    /// Seconds of queued work at the last encoded unit.
    public private(set) var lag = 0.0
    public private(set) var frameStep = 1
    private var skips: [Double] = []
    private var lastSkipAsked: Double?
    /// Since when the lag has stayed under ``Limits/recoveredBelow``.
    private var goodSince: Double?

    public init(limits: Limits = Limits()) { self.limits = limits }

    /// A video unit that arrived at the worker at `arrived` is encoded at `done` (seconds on one
    /// monotonic clock).
    public mutating func encoded(arrived: Double, done: Double) -> [Action] {
        lag = max(0, done - arrived)
        if lag < limits.recoveredBelow {
            let since = goodSince ?? done
            goodSince = since
            if frameStep > 1, done - since >= limits.recoverAfter {
                frameStep -= 1
                goodSince = done
                return [.frameStep(frameStep)]
            }
            return []
        }
        goodSince = nil
        guard lag > limits.behindAfter, done - (lastSkipAsked ?? -.infinity) >= limits.skipHoldOff else { return [] }
        lastSkipAsked = done
        return [.skipToNewestKeyframe]
    }

    /// The shell tried the skip at `time` (with or without a keyframe to skip to: either way the
    /// worker needed a catch-up, and thinning is the remedy when skips come often or cannot be
    /// made).
    public mutating func skipped(at time: Double) -> [Action] {
        skips = skips.filter { time - $0 < limits.sustainedWindow } + [time]
        guard skips.count >= limits.skipsToThin, frameStep < limits.maximumFrameStep else { return [] }
        frameStep += 1
        skips = []
        goodSince = nil
        return [.frameStep(frameStep)]
    }
}
