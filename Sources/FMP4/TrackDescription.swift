/// What an init segment needs to describe one CMAF track.
public struct TrackDescription: Equatable, Sendable {
    public enum Media: Equatable, Sendable {
        /// `avcC` payload and the coded size.
        case h264(avcC: [UInt8], width: Int, height: Int)
        /// `hvcC` payload (HEVCDecoderConfigurationRecord) and the coded size; written as `hvc1`
        /// (parameter sets in the sample entry only, as Apple's HLS authoring rules require).
        case hevc(hvcC: [UInt8], width: Int, height: Int)
        /// AudioSpecificConfig, sample rate and channel count.
        case aac(audioSpecificConfig: [UInt8], sampleRate: Int, channels: Int)
    }

    public var trackID: UInt32
    public var timescale: UInt32
    public var media: Media
    /// Average bit rate for esds (0 when unknown).
    public var bitrate: UInt32

    public init(trackID: UInt32 = 1, timescale: UInt32, media: Media, bitrate: UInt32 = 0) {
        self.trackID = trackID
        self.timescale = timescale
        self.media = media
        self.bitrate = bitrate
    }

    public var isVideo: Bool {
        switch media {
        case .h264, .hevc: true
        case .aac: false
        }
    }

    /// The coded size of a video track.
    public var size: (width: Int, height: Int)? {
        switch media {
        case .h264(_, let w, let h), .hevc(_, let w, let h): (w, h)
        case .aac: nil
        }
    }
}
