/// A partial segment (draft-pantos-hls-rfc8216bis section 4.4.4.9, EXT-X-PART).
public struct PlaylistPart: Equatable, Sendable {
    /// Seconds.
    public var duration: Double
    public var uri: String
    /// The part starts with a sync sample (a keyframe for video, every part for audio).
    public var independent: Bool

    public init(duration: Double, uri: String, independent: Bool) {
        self.duration = duration
        self.uri = uri
        self.independent = independent
    }
}

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
    /// Its parts, listed before the segment while it is near the live edge (empty further back).
    public var parts: [PlaylistPart]
    /// A new EXT-X-MAP from this segment on (a recording whose resolution changed).
    public var mapURI: String?
    /// EXT-X-GAP (section 4.4.4.7): the segment has no media, and clients do not load it.
    public var gap: Bool

    public init(sequence: Int, duration: Double, uri: String, discontinuity: Bool = false, gap: Bool = false, programDateTime: String? = nil, parts: [PlaylistPart] = [], mapURI: String? = nil) {
        self.mapURI = mapURI
        self.gap = gap
        self.sequence = sequence
        self.duration = duration
        self.uri = uri
        self.discontinuity = discontinuity
        self.programDateTime = programDateTime
        self.parts = parts
    }
}

/// EXT-X-SERVER-CONTROL (section 4.4.3.8): what the origin can do for Low-Latency clients.
public struct ServerControl: Equatable, Sendable {
    public var canBlockReload: Bool
    /// Seconds; delta updates may skip segments older than this from the end.
    public var canSkipUntil: Double?
    /// Seconds from the live edge where a low-latency client starts.
    public var partHoldBack: Double?

    public init(canBlockReload: Bool, canSkipUntil: Double? = nil, partHoldBack: Double? = nil) {
        self.canBlockReload = canBlockReload
        self.canSkipUntil = canSkipUntil
        self.partHoldBack = partHoldBack
    }
}

/// EXT-X-RENDITION-REPORT (section 4.4.5.4): the edge of a sibling rendition, so a client
/// switching to it can issue its first blocking request without a plain reload.
public struct RenditionReport: Equatable, Sendable {
    public var uri: String
    public var lastSequence: Int
    public var lastPart: Int?

    public init(uri: String, lastSequence: Int, lastPart: Int?) {
        self.uri = uri
        self.lastSequence = lastSequence
        self.lastPart = lastPart
    }
}

/// A media playlist for one rendition: fMP4 (EXT-X-MAP), a rolling window of segments, and the
/// Low-Latency HLS additions when `partTarget` is set.
public struct MediaPlaylist: Equatable, Sendable {
    public var targetDuration: Int
    public var mapURI: String
    public var segments: [PlaylistSegment]
    /// Discontinuities that scrolled out of the window before the first listed segment.
    public var discontinuitySequence: Int
    public var ended: Bool
    /// EXT-X-PLAYLIST-TYPE (nil for a live window, "EVENT" or "VOD").
    public var playlistType: String?
    /// EXT-X-PART-INF PART-TARGET, seconds.
    public var partTarget: Double?
    public var serverControl: ServerControl?
    /// Parts of the segment still being written, after the last complete segment.
    public var trailingParts: [PlaylistPart]
    /// Tags of the segment still being written, before its parts: it follows a discontinuity,
    /// or it starts a new EXT-X-MAP (its track changed).
    public var trailingDiscontinuity = false
    public var trailingMapURI: String?
    /// EXT-X-PRELOAD-HINT TYPE=PART: the part the origin writes next.
    public var preloadHintURI: String?
    public var renditionReports: [RenditionReport]
    /// A delta update (`_HLS_skip=YES`): this many segments at the start are replaced by EXT-X-SKIP.
    public var skippedSegments: Int
    /// EXT-X-DATERANGE tags, written only when a segment has a program date-time (section
    /// 4.4.5.1 needs one) and in delta updates too (CAN-SKIP-DATERANGES is not offered).
    public var dateRanges: [DateRange] = []

    public init(targetDuration: Int, mapURI: String, segments: [PlaylistSegment], discontinuitySequence: Int = 0, ended: Bool = false, playlistType: String? = nil,
                partTarget: Double? = nil, serverControl: ServerControl? = nil, trailingParts: [PlaylistPart] = [], preloadHintURI: String? = nil,
                renditionReports: [RenditionReport] = [], skippedSegments: Int = 0) {
        self.targetDuration = targetDuration
        self.mapURI = mapURI
        self.segments = segments
        self.discontinuitySequence = discontinuitySequence
        self.ended = ended
        self.playlistType = playlistType
        self.partTarget = partTarget
        self.serverControl = serverControl
        self.trailingParts = trailingParts
        self.preloadHintURI = preloadHintURI
        self.renditionReports = renditionReports
        self.skippedSegments = skippedSegments
    }

    /// PART-TARGET as written: rounded up to the millisecond, so every part's duration stays at
    /// or under it. What PART-HOLD-BACK is measured against.
    public static func writtenPartTarget(_ seconds: Double) -> Double {
        (seconds * 1000 - 1e-6).rounded(.up) / 1000
    }

    public func render() -> String {
        // EXT-X-SKIP needs protocol version 9 (section 4.4.5.2); everything else here is version 7.
        var lines = ["#EXTM3U", "#EXT-X-VERSION:\(skippedSegments > 0 ? 9 : 7)", "#EXT-X-TARGETDURATION:\(targetDuration)"]
        if let c = serverControl {
            var attrs: [String] = []
            if c.canBlockReload { attrs.append("CAN-BLOCK-RELOAD=YES") }
            if let skip = c.canSkipUntil { attrs.append("CAN-SKIP-UNTIL=\(formatDecimal(skip, places: 3))") }
            if let hold = c.partHoldBack { attrs.append("PART-HOLD-BACK=\(formatDecimal(hold, places: 3))") }
            lines.append("#EXT-X-SERVER-CONTROL:" + attrs.joined(separator: ","))
        }
        if let partTarget { lines.append("#EXT-X-PART-INF:PART-TARGET=\(formatDecimal(Self.writtenPartTarget(partTarget), places: 3))") }
        lines.append("#EXT-X-MEDIA-SEQUENCE:\(segments.first?.sequence ?? 0)")
        if discontinuitySequence > 0 { lines.append("#EXT-X-DISCONTINUITY-SEQUENCE:\(discontinuitySequence)") }
        if let playlistType { lines.append("#EXT-X-PLAYLIST-TYPE:\(playlistType)") }
        lines.append("#EXT-X-MAP:URI=\"\(mapURI)\"")
        if skippedSegments > 0 { lines.append("#EXT-X-SKIP:SKIPPED-SEGMENTS=\(skippedSegments)") }
        if segments.contains(where: { $0.programDateTime != nil }) { lines += dateRanges.map { $0.render() } }
        // A map that changed among the skipped segments is restated for the first listed one.
        var carriedMap = segments.prefix(skippedSegments).last { $0.mapURI != nil }?.mapURI
        for s in segments.dropFirst(skippedSegments) {
            if s.discontinuity { lines.append("#EXT-X-DISCONTINUITY") }
            if let map = s.mapURI ?? carriedMap { lines.append("#EXT-X-MAP:URI=\"\(map)\"") }
            carriedMap = nil
            if let pdt = s.programDateTime { lines.append("#EXT-X-PROGRAM-DATE-TIME:\(pdt)") }
            for p in s.parts { lines.append(Self.partLine(p)) }
            if s.gap { lines.append("#EXT-X-GAP") }
            lines.append("#EXTINF:\(formatDecimal(s.duration, places: 5)),")
            lines.append(s.uri)
        }
        if !trailingParts.isEmpty {
            if trailingDiscontinuity { lines.append("#EXT-X-DISCONTINUITY") }
            if let map = trailingMapURI { lines.append("#EXT-X-MAP:URI=\"\(map)\"") }
        }
        for p in trailingParts { lines.append(Self.partLine(p)) }
        if let hint = preloadHintURI { lines.append("#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"\(hint)\"") }
        for r in renditionReports {
            var attrs = "URI=\"\(r.uri)\",LAST-MSN=\(r.lastSequence)"
            if let part = r.lastPart { attrs += ",LAST-PART=\(part)" }
            lines.append("#EXT-X-RENDITION-REPORT:\(attrs)")
        }
        if ended { lines.append("#EXT-X-ENDLIST") }
        return lines.joined(separator: "\n") + "\n"
    }

    static func partLine(_ p: PlaylistPart) -> String {
        "#EXT-X-PART:DURATION=\(formatDecimal(p.duration, places: 5)),URI=\"\(p.uri)\"" + (p.independent ? ",INDEPENDENT=YES" : "")
    }

    /// How many segments a delta update may leave out: every segment before the last
    /// `skipBoundary` seconds of the playlist (section 6.2.5.1).
    public static func skippableSegments(durations: [Double], skipBoundary: Double) -> Int {
        var kept = 0.0
        var index = durations.count
        while index > 0, kept < skipBoundary {
            index -= 1
            kept += durations[index]
        }
        return index
    }
}
