/// One rung of the ABR ladder.
public struct Rung: Sendable, Equatable {
    public var name: String
    /// The rung's short side: its height for landscape sources, its width for portrait ones.
    public var shortSide: Int
    public var bitrate: Int

    public init(name: String, shortSide: Int, bitrate: Int) {
        self.name = name
        self.shortSide = shortSide
        self.bitrate = bitrate
    }
}

/// A rung resolved against a concrete source: the size to encode.
public struct PlannedRendition: Sendable, Equatable {
    public var name: String
    public var width: Int
    public var height: Int
    public var bitrate: Int
}

/// The field ladder (1080p at 6 Mbps, 720p at 2 Mbps, 480p at 0.8 Mbps, 360p at 0.4 Mbps) and the
/// rule that turns it into renditions for a given source: never upscale, keep the aspect ratio,
/// even dimensions (4:2:0), and always at least one rendition.
public struct RenditionLadder: Sendable, Equatable {
    public static let field = RenditionLadder(rungs: [
        Rung(name: "1080p", shortSide: 1080, bitrate: 6_000_000),
        Rung(name: "720p", shortSide: 720, bitrate: 2_000_000),
        Rung(name: "480p", shortSide: 480, bitrate: 800_000),
        Rung(name: "360p", shortSide: 360, bitrate: 400_000),
    ])

    public var rungs: [Rung]

    public init(rungs: [Rung]) {
        self.rungs = rungs.sorted { $0.shortSide > $1.shortSide }
    }

    /// Keeps only the named rungs (operator's `--rungs 480p,360p`).
    public func restricted(to names: [String]) -> RenditionLadder {
        RenditionLadder(rungs: rungs.filter { names.contains($0.name) })
    }

    /// `ceiling` is the tenant's largest rendition (short side): rungs above it are left out,
    /// and a source above it counts as one of that size (a ceiling below the lowest rung gives
    /// one rendition at the ceiling).
    public func plan(sourceWidth: Int, sourceHeight: Int, ceiling: Int? = nil) -> [PlannedRendition] {
        guard sourceWidth > 0, sourceHeight > 0 else { return [] }
        let portrait = sourceHeight > sourceWidth
        let sourceShort = portrait ? sourceWidth : sourceHeight
        let sourceLong = portrait ? sourceHeight : sourceWidth
        // The largest short side to encode: the source's, or the tenant's ceiling below it.
        let largest = ceiling.map { min(sourceShort, max(2, $0 / 2 * 2)) } ?? sourceShort
        var chosen = rungs.filter { $0.shortSide <= largest }
        if chosen.isEmpty, let smallest = rungs.last {
            // A source (or a ceiling) below the lowest rung is encoded once at that size.
            chosen = [Rung(name: "\(Self.even(Double(largest)))p", shortSide: largest, bitrate: smallest.bitrate)]
        }
        return chosen.map { rung in
            let short = Self.even(Double(rung.shortSide))
            let long = Self.even(Double(rung.shortSide) * Double(sourceLong) / Double(sourceShort))
            return PlannedRendition(name: rung.name, width: portrait ? short : long, height: portrait ? long : short, bitrate: rung.bitrate)
        }
    }

    /// Nearest even size (4:2:0 needs even dimensions): 853.3 -> 854, as ffmpeg's `-2` does.
    static func even(_ v: Double) -> Int { max(2, Int((v / 2).rounded()) * 2) }
}
