import Foundation
import StorecastWire

/// How a worker encodes: the operator's choices, applied to every stream it runs.
public struct TranscoderSettings: Sendable, Equatable {
    public var preset: String
    public var gopSeconds: Double
    public var frameRate: Int
    public var encoderThreads: Int
    /// Rung names to produce (empty: the whole field ladder).
    public var rungs: [String]
    /// Units queued per stream before the worker sheds frames.
    public var maximumQueuedUnits: Int
    /// Seconds of stream time between JPEG previews (0: none).
    public var thumbnailInterval: Double
    /// What each rung scales from: the decoded source (the default), or the nearest larger rung's
    /// picture. Measured (docs/benchmarks.md): from the nearest larger rung the 360p rung loses
    /// 0.4 dB PSNR and the ladder is not faster, since each rung waits for the larger one's scale.
    public enum ScaleSource: String, Sendable, CaseIterable { case rung, source }
    public var scaleFrom: ScaleSource = .source
    /// Also pass the publisher's H.264 through as a "source" rendition (no re-encode; its
    /// keyframes are the publisher's, so they line up with the ladder only at a 2 s GOP).
    public var sourceRung = false
    /// A JPEG shown while video is missing; nil: the last frame, dimmed.
    public var slateImage: [UInt8]?
    /// x264's zerolatency tune.
    public var lowLatency = true
    /// Seconds after a stream's first keyframe to one extra keyframe in every rung, so the
    /// packager can close a short first segment (``KeyframeCadence``); nil: none. 0.4 s is
    /// two of the packager's default 0.2 s parts: a player waiting for the show starts as soon as
    /// the first segment is out (`master.m3u8` waits for it). hls.js loads a live segment part by
    /// part only when the segment it moves to ends at least a part after the playlist's first
    /// part; after a one-part first segment (0.2 s) it waited for the whole second one and froze
    /// about 1.2 s right after its first frame. 0.4 s showed the first frame 0.94 s after the
    /// publisher's media time 0, against 1.14 s at 0.6 s, with no stall (docs/benchmarks.md).
    public var fastStart: Double? = 0.4
    /// Rungs from a ladder profile; replaces the field ladder (and `rungs`) when set.
    public var profileLadder: RenditionLadder?
    /// The tenant's largest rendition (short side in pixels), from the lease; nil: none. Rungs
    /// above it are left out, and so is the source rung of a source above it.
    public var ladderCeiling: Int?

    public init(preset: String = "veryfast", gopSeconds: Double = 2, frameRate: Int = 30, encoderThreads: Int = 0, rungs: [String] = [], maximumQueuedUnits: Int = 600, thumbnailInterval: Double = 5) {
        self.thumbnailInterval = thumbnailInterval
        self.preset = preset
        self.gopSeconds = gopSeconds
        self.frameRate = frameRate
        self.encoderThreads = encoderThreads
        self.rungs = rungs
        self.maximumQueuedUnits = maximumQueuedUnits
    }

    /// x264 threads for rung `index` of `count`: `encoderThreads` when set; otherwise (0, "auto")
    /// the rungs already run in parallel, one thread each, and cores left over go to the top
    /// rung as x264 slices (zerolatency keeps them free of added delay).
    public func encoderThreads(rung index: Int, of count: Int, cores: Int = ProcessInfo.processInfo.activeProcessorCount) -> Int {
        if encoderThreads > 0 { return encoderThreads }
        return index == 0 ? max(1, cores - (count - 1)) : 1
    }

    public var ladder: RenditionLadder {
        if let profileLadder { return profileLadder }
        return rungs.isEmpty ? .field : RenditionLadder.field.restricted(to: rungs)
    }

    /// Whether `jpeg` decodes as a slate picture (checked when the worker starts).
    public static func slateImageDecodes(_ jpeg: [UInt8]) -> Bool {
        LadderEncoder.decodeImage(jpeg) != nil
    }

    /// These settings with a stream's ladder profile (rungs, preset, GOP, tune) and its
    /// tenant's ladder ceiling applied.
    public func applying(_ profile: TranscodeProfile?, ceiling: Int? = nil) -> TranscoderSettings {
        var s = self
        s.ladderCeiling = ceiling
        guard let profile else { return s }
        s.preset = profile.preset
        s.gopSeconds = Double(profile.gopSeconds)
        s.lowLatency = profile.lowLatency
        s.profileLadder = RenditionLadder(rungs: profile.rungs.map { Rung(name: $0.name, shortSide: Int($0.shortSide), bitrate: Int($0.bitrate)) })
        return s
    }
}
