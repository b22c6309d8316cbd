/// A variant stream (RFC 8216 section 4.3.4.2, EXT-X-STREAM-INF).
public struct VariantStream: Equatable, Sendable {
    public var uri: String
    /// Peak bits per second of the variant including its audio.
    public var bandwidth: Int
    public var averageBandwidth: Int?
    public var width: Int?
    public var height: Int?
    public var frameRate: Double?
    /// RFC 6381 codecs of every track the variant plays (video plus its audio group).
    public var codecs: [String]
    public var audioGroup: String?

    public init(uri: String, bandwidth: Int, averageBandwidth: Int? = nil, width: Int? = nil, height: Int? = nil, frameRate: Double? = nil, codecs: [String], audioGroup: String? = nil) {
        self.uri = uri
        self.bandwidth = bandwidth
        self.averageBandwidth = averageBandwidth
        self.width = width
        self.height = height
        self.frameRate = frameRate
        self.codecs = codecs
        self.audioGroup = audioGroup
    }
}

/// An alternative audio rendition (RFC 8216 section 4.3.4.1, EXT-X-MEDIA TYPE=AUDIO).
public struct AudioRendition: Equatable, Sendable {
    public var groupID: String
    public var name: String
    public var uri: String
    public var isDefault: Bool
    public var channels: Int?
    public init(groupID: String, name: String, uri: String, isDefault: Bool = true, channels: Int? = nil) {
        self.groupID = groupID
        self.name = name
        self.uri = uri
        self.isDefault = isDefault
        self.channels = channels
    }
}

/// Renders the multivariant (master) playlist. Variants are written highest bandwidth first,
/// the order players take as a hint for the starting variant ("first listed").
public enum MultivariantPlaylist {
    public static func render(variants: [VariantStream], audio: [AudioRendition] = [], independentSegments: Bool = true) -> String {
        var lines = ["#EXTM3U", "#EXT-X-VERSION:7"]
        if independentSegments { lines.append("#EXT-X-INDEPENDENT-SEGMENTS") }
        for a in audio {
            var attrs = "TYPE=AUDIO,GROUP-ID=\"\(a.groupID)\",NAME=\"\(a.name)\",DEFAULT=\(a.isDefault ? "YES" : "NO"),AUTOSELECT=YES"
            if let ch = a.channels { attrs += ",CHANNELS=\"\(ch)\"" }
            attrs += ",URI=\"\(a.uri)\""
            lines.append("#EXT-X-MEDIA:\(attrs)")
        }
        for v in variants.sorted(by: { $0.bandwidth > $1.bandwidth }) {
            var attrs = "BANDWIDTH=\(v.bandwidth)"
            if let avg = v.averageBandwidth { attrs += ",AVERAGE-BANDWIDTH=\(avg)" }
            if let w = v.width, let h = v.height { attrs += ",RESOLUTION=\(w)x\(h)" }
            if let fps = v.frameRate { attrs += ",FRAME-RATE=\(formatDecimal(fps, places: 3))" }
            attrs += ",CODECS=\"\(v.codecs.joined(separator: ","))\""
            if let g = v.audioGroup { attrs += ",AUDIO=\"\(g)\"" }
            lines.append("#EXT-X-STREAM-INF:\(attrs)")
            lines.append(v.uri)
        }
        return lines.joined(separator: "\n") + "\n"
    }
}

/// Decimal text with a fixed number of places and no locale (m3u8 wants '.' always).
func formatDecimal(_ value: Double, places: Int) -> String {
    var scale = 1.0
    for _ in 0..<places { scale *= 10 }
    let scaled = Int64((value * scale).rounded())
    let sign = scaled < 0 ? "-" : ""
    let magnitude = scaled.magnitude
    let whole = magnitude / UInt64(scale)
    var fraction = String(magnitude % UInt64(scale))
    while fraction.count < places { fraction = "0" + fraction }
    return places == 0 ? "\(sign)\(whole)" : "\(sign)\(whole).\(fraction)"
}
