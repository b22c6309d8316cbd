import FMP4
import HLS
import MediaFormats
import StorecastWire

/// One rendition as served: its init segment and a rolling window of segments.
public struct RenditionPackage: Sendable {
    public var track: TrackConfig
    public var codecString: String
    public var initSegment: [UInt8]
    public var segments: [PackagedSegment] = []
    public var discontinuitySequence = 0
    public var ended = false
    /// Dropped by the transcoder (shed under load, or gone from a new ladder): out of the
    /// multivariant playlist, its media playlist ended.
    public var retired = false

    /// Measured average bits per second over the window.
    public var averageBitrate: Int? {
        let seconds = segments.reduce(0) { $0 + $1.duration }
        guard seconds > 0 else { return nil }
        return Int(Double(segments.reduce(0) { $0 + $1.bytes.count }) * 8 / seconds)
    }

    /// The highest bit rate of a segment in the window (BANDWIDTH in RFC 8216 terms).
    public var peakBitrate: Int? {
        segments.filter { $0.duration > 0 }.map { Int(Double($0.bytes.count) * 8 / $0.duration) }.max()
    }

    public var measuredFrameRate: Double? {
        let seconds = segments.reduce(0) { $0 + $1.duration }
        guard track.kind == .video, seconds > 0 else { return nil }
        return Double(segments.reduce(0) { $0 + $1.sampleCount }) / seconds
    }

    public func mediaPlaylist(segmentURI: (Int) -> String, initURI: String, targetDuration: Double) -> String {
        MediaPlaylist(
            // RFC 8216 4.3.3.1: every EXTINF rounded to the nearest integer is <= the target.
            targetDuration: max(Int(targetDuration.rounded()), Int((segments.map(\.duration).max() ?? targetDuration).rounded()), 1),
            mapURI: initURI,
            segments: segments.map {
                PlaylistSegment(sequence: $0.sequence, duration: $0.duration, uri: segmentURI($0.sequence), discontinuity: $0.discontinuity,
                                programDateTime: $0.programDateTime.map(ProgramDateTime.format))
            },
            discontinuitySequence: discontinuitySequence,
            ended: ended
        ).render()
    }
}

/// Everything the packager serves for one live stream.
public struct StreamPackage: Sendable {
    public var streamID: Int64
    public var tenant: String
    public var name: String
    public var renditions: [String: RenditionPackage]
    public var ended = false
    /// The latest preview still (JPEG) from the transcoder.
    public var thumbnail: Thumbnail?

    /// Names of the video renditions, best first.
    public var videoRenditions: [RenditionPackage] {
        renditions.values.filter { $0.track.kind == .video }.sorted { $0.track.height > $1.track.height }
    }

    public var audioRendition: RenditionPackage? { renditions.values.first { $0.track.kind == .audio } }

    /// Playable once every announced rendition has a segment: a player that fetched the
    /// multivariant playlist earlier could pick a variant or audio group whose media playlist
    /// is still empty, which some players (Chromium's native HLS) treat as a parse error.
    public var isReady: Bool { !renditions.isEmpty && renditions.values.allSatisfy { !$0.segments.isEmpty } }

    public func multivariantPlaylist() -> String {
        let audio = audioRendition
        let videos = videoRenditions.filter { !$0.segments.isEmpty && !$0.retired }
        if videos.isEmpty, let audio, !audio.segments.isEmpty {
            return MultivariantPlaylist.render(variants: [VariantStream(
                uri: "\(audio.track.name)/index.m3u8", bandwidth: Int(audio.track.bitrate) + 16_000,
                averageBandwidth: audio.averageBitrate, codecs: [audio.codecString])])
        }
        let audioBandwidth = audio.map { Int($0.track.bitrate) } ?? 0
        let variants = videos.map { v in
            VariantStream(
                uri: "\(v.track.name)/index.m3u8",
                bandwidth: max(Int(Double(v.track.bitrate) * 1.1), v.peakBitrate ?? 0) + audioBandwidth,
                averageBandwidth: v.averageBitrate.map { $0 + (audio?.averageBitrate ?? 0) },
                width: Int(v.track.width), height: Int(v.track.height),
                frameRate: v.measuredFrameRate,
                codecs: [v.codecString] + (audio.map { [$0.codecString] } ?? []),
                audioGroup: audio == nil ? nil : "audio")
        }
        let groups = audio.map { [AudioRendition(groupID: "audio", name: "Main", uri: "\($0.track.name)/index.m3u8", channels: Int($0.track.channels))] } ?? []
        return MultivariantPlaylist.render(variants: variants, audio: groups)
    }
}

extension RenditionPackage {
    /// Builds the init segment and codecs string for a track announced by a transcoder.
    public init(track: TrackConfig) throws {
        self.track = track
        switch track.kind {
        case .video:
            let record = try AVCDecoderConfigurationRecord(parsing: track.config)
            codecString = record.codecString
            initSegment = InitSegment.make(TrackDescription(timescale: track.timescale, media: .h264(avcC: track.config, width: Int(track.width), height: Int(track.height)), bitrate: track.bitrate))
        case .audio:
            let asc = try AudioSpecificConfig(parsing: track.config)
            codecString = asc.codecString
            initSegment = InitSegment.make(TrackDescription(timescale: track.timescale, media: .aac(audioSpecificConfig: track.config, sampleRate: asc.sampleRate, channels: asc.channels), bitrate: track.bitrate))
        }
    }
}
