/// The largest source a tenant may publish (fair share: a 4K60 phone costs a transcoder many
/// times a 720p30 one). Pure: ingest asks it when a publisher describes its video and as its
/// frame rate is known, and refuses the publish with the reason.
public struct SourceLimits: Sendable, Equatable {
    public var maximumShortSide: Int
    public var maximumFrameRate: Double

    public static let defaults = SourceLimits(maximumShortSide: 1080, maximumFrameRate: 60)
    /// Measured frame rates jitter: a source is over the cap only past this factor.
    public static let frameRateTolerance = 1.1

    public init(maximumShortSide: Int, maximumFrameRate: Double) {
        self.maximumShortSide = maximumShortSide
        self.maximumFrameRate = maximumFrameRate
    }

    /// Why a source of this size is refused, or nil. Portrait and landscape alike: the short side.
    public func refusal(width: Int, height: Int) -> String? {
        let short = min(width, height)
        guard short > maximumShortSide else { return nil }
        return "Your video is \(width)x\(height); this account takes at most \(maximumShortSide)p. Lower the resolution in your encoder."
    }

    /// Why a source at this frame rate is refused, or nil.
    public func refusal(frameRate: Double) -> String? {
        guard frameRate > maximumFrameRate * Self.frameRateTolerance else { return nil }
        return "Your video is \(Int(frameRate.rounded())) fps; this account takes at most \(Int(maximumFrameRate.rounded())) fps. Lower the frame rate in your encoder."
    }
}
