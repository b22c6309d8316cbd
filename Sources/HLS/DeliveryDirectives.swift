/// The query parameters a Low-Latency HLS client adds to a media playlist request
/// (draft-pantos-hls-rfc8216bis section 6.2.5): `_HLS_msn`, `_HLS_part` and `_HLS_skip`.
public struct DeliveryDirectives: Equatable, Sendable {
    public var mediaSequence: Int?
    public var part: Int?
    /// `_HLS_skip=YES` or `v2`: the client wants a delta update.
    public var skip: Bool

    public init(mediaSequence: Int? = nil, part: Int? = nil, skip: Bool = false) {
        self.mediaSequence = mediaSequence
        self.part = part
        self.skip = skip
    }

    public var isBlocking: Bool { mediaSequence != nil }

    public enum ParseError: Error, Equatable, CustomStringConvertible {
        case notANumber(name: String, value: String)
        case partWithoutMediaSequence
        case badSkip(String)

        public var description: String {
            switch self {
            case .notANumber(let name, let value): "\(name)=\(value) is not a non-negative integer."
            case .partWithoutMediaSequence: "_HLS_part needs _HLS_msn (section 6.2.5.2)."
            case .badSkip(let value): "_HLS_skip=\(value): use YES or v2."
            }
        }
    }

    /// Reads the directives from decoded query parameters; unknown parameters are ignored.
    public init(query: [String: String]) throws(ParseError) {
        func number(_ name: String) throws(ParseError) -> Int? {
            guard let text = query[name] else { return nil }
            guard let value = Int(text), value >= 0 else { throw .notANumber(name: name, value: text) }
            return value
        }
        mediaSequence = try number("_HLS_msn")
        part = try number("_HLS_part")
        if part != nil && mediaSequence == nil { throw .partWithoutMediaSequence }
        switch query["_HLS_skip"] {
        case nil: skip = false
        case "YES", "v2": skip = true
        case let other?: throw .badSkip(other)
        }
    }
}

/// Where a media playlist's live edge is, in the terms blocking reload is decided in.
public struct PlaylistEdge: Equatable, Sendable {
    /// The newest complete segment, if any.
    public var lastCompleteSequence: Int?
    /// The newest part listed, as (segment, part index); nil before the first part.
    public var lastPart: (sequence: Int, index: Int)?
    /// The last segment the playlist lists (complete or being written with parts).
    public var lastSequence: Int { max(lastCompleteSequence ?? -1, lastPart?.sequence ?? -1) }
    public var ended: Bool

    public init(lastCompleteSequence: Int?, lastPart: (sequence: Int, index: Int)?, ended: Bool = false) {
        self.lastCompleteSequence = lastCompleteSequence
        self.lastPart = lastPart
        self.ended = ended
    }

    public static func == (a: PlaylistEdge, b: PlaylistEdge) -> Bool {
        a.lastCompleteSequence == b.lastCompleteSequence && a.lastPart?.sequence == b.lastPart?.sequence && a.lastPart?.index == b.lastPart?.index && a.ended == b.ended
    }
}

/// The origin's answer to a playlist request, decided without clocks or I/O; the HTTP shell
/// waits on `.hold` until the playlist changes or its timeout passes.
public enum BlockingReloadDecision: Equatable, Sendable {
    case respond
    case hold
    case badRequest(String)

    /// Section 6.2.5.2. `_HLS_msn=M` alone (Safari sends it that way) waits for segment M to be
    /// complete; with `_HLS_part=N` it waits for part N of segment M, or anything later. A request
    /// more than two segments past the last one, or more than the Advance Part Limit of parts
    /// past the last part, is refused at once. An ended playlist answers at once.
    public static func decide(_ directives: DeliveryDirectives, edge: PlaylistEdge, partTarget: Double) -> BlockingReloadDecision {
        guard let msn = directives.mediaSequence, !edge.ended else { return .respond }
        let last = edge.lastSequence
        if msn > last + 2 {
            return .badRequest("_HLS_msn=\(msn) is more than two segments past the last one (\(last)); reload the playlist without directives.")
        }
        guard let part = directives.part else {
            return (edge.lastCompleteSequence ?? -1) >= msn ? .respond : .hold
        }
        let limit = advancePartLimit(partTarget: partTarget)
        let lastPart = edge.lastPart ?? (sequence: last, index: -1)
        if msn == lastPart.sequence, part > lastPart.index + limit {
            return .badRequest("_HLS_part=\(part) is more than \(limit) parts past the last part (\(lastPart.sequence).\(lastPart.index)).")
        }
        if msn > lastPart.sequence, part >= limit {
            return .badRequest("_HLS_part=\(part) of a segment not started yet is past the Advance Part Limit (\(limit)).")
        }
        if lastPart.sequence > msn || (lastPart.sequence == msn && lastPart.index >= part) { return .respond }
        return .hold
    }

    /// Three divided by the part target when that is under a second, otherwise three.
    public static func advancePartLimit(partTarget: Double) -> Int {
        partTarget < 1 ? Int((3 / partTarget + 1e-9).rounded(.down)) : 3
    }
}
