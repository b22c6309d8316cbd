/// One media segment as listed in a media playlist (RFC 8216 section 4.3.2).
public struct PlaylistSegment: Equatable, Sendable {
    public var sequence: Int
    /// Seconds.
    public var duration: Double
    public var uri: String
    /// A discontinuity precedes this segment (reconnect, failover).
    public var discontinuity: Bool
    /// Wall-clock time of the first sample, ISO 8601 with milliseconds.
    public var programDateTime: String?

    public init(sequence: Int, duration: Double, uri: String, discontinuity: Bool = false, programDateTime: String? = nil) {
        self.sequence = sequence
        self.duration = duration
        self.uri = uri
        self.discontinuity = discontinuity
        self.programDateTime = programDateTime
    }
}

/// A media playlist for one rendition: fMP4 (EXT-X-MAP), a rolling window of segments.
public struct MediaPlaylist: Equatable, Sendable {
    public var targetDuration: Int
    public var mapURI: String
    public var segments: [PlaylistSegment]
    /// Discontinuities that scrolled out of the window before the first listed segment.
    public var discontinuitySequence: Int
    public var ended: Bool
    /// EXT-X-PLAYLIST-TYPE (nil for a live window, "EVENT" or "VOD").
    public var playlistType: String?

    public init(targetDuration: Int, mapURI: String, segments: [PlaylistSegment], discontinuitySequence: Int = 0, ended: Bool = false, playlistType: String? = nil) {
        self.targetDuration = targetDuration
        self.mapURI = mapURI
        self.segments = segments
        self.discontinuitySequence = discontinuitySequence
        self.ended = ended
        self.playlistType = playlistType
    }

    public func render() -> String {
        var lines = ["#EXTM3U", "#EXT-X-VERSION:7", "#EXT-X-TARGETDURATION:\(targetDuration)"]
        lines.append("#EXT-X-MEDIA-SEQUENCE:\(segments.first?.sequence ?? 0)")
        if discontinuitySequence > 0 { lines.append("#EXT-X-DISCONTINUITY-SEQUENCE:\(discontinuitySequence)") }
        if let playlistType { lines.append("#EXT-X-PLAYLIST-TYPE:\(playlistType)") }
        lines.append("#EXT-X-MAP:URI=\"\(mapURI)\"")
        for s in segments {
            if s.discontinuity { lines.append("#EXT-X-DISCONTINUITY") }
            if let pdt = s.programDateTime { lines.append("#EXT-X-PROGRAM-DATE-TIME:\(pdt)") }
            lines.append("#EXTINF:\(formatDecimal(s.duration, places: 5)),")
            lines.append(s.uri)
        }
        if ended { lines.append("#EXT-X-ENDLIST") }
        return lines.joined(separator: "\n") + "\n"
    }
}
