// No imports: fuzz/run.sh builds this file into its parser targets.

/// The names the packager gives a rendition's files, relative to its media playlist.
public struct PlaylistURIs: Sendable {
    public var query: String
    /// The names without a token: files on disk (recordings, the DVR window).
    public static let plain = PlaylistURIs(query: "")
    /// Version 0 is `init.mp4`; a track that changed gets `init-<version>.mp4`.
    public func initSegment(_ version: Int = 0) -> String { (version == 0 ? "init.mp4" : "init-\(version).mp4") + query }
    public func segment(_ sequence: Int) -> String { "seg-\(sequence).m4s" + query }
    public func part(_ sequence: Int, _ index: Int) -> String { "part-\(sequence).\(index).m4s" + query }

    /// What a media file name asks for.
    public enum Resource: Equatable, Sendable {
        case initSegment(Int)
        case segment(Int)
        case part(Int, Int)
    }

    /// Read from the name's bytes: the origin's hot path reads one for every request it answers.
    /// Only the names these functions make are read (a number in decimal digits, no sign, no
    /// leading zero, at most 18 digits), so one file has one URL (media are served immutable).
    public static func resource(_ name: String) -> Resource? {
        var name = name
        return name.withUTF8 { resource(bytes: $0[...]) }
    }

    private static func resource(bytes name: Slice<UnsafeBufferPointer<UInt8>>) -> Resource? {
        func number(_ digits: Slice<UnsafeBufferPointer<UInt8>>) -> Int? {
            guard !digits.isEmpty, digits.count <= 18, digits.count == 1 || digits.first != UInt8(ascii: "0") else { return nil }
            var n = 0
            for byte in digits {
                guard byte &- UInt8(ascii: "0") < 10 else { return nil }
                n = n * 10 + Int(byte &- UInt8(ascii: "0"))
            }
            return n
        }
        func strip(_ prefix: String, _ suffix: String) -> Slice<UnsafeBufferPointer<UInt8>>? {
            let (p, s) = (prefix.utf8, suffix.utf8)
            guard name.count >= p.count + s.count, name.starts(with: p), name[(name.endIndex - s.count)...].elementsEqual(s) else { return nil }
            return name[(name.startIndex + p.count)..<(name.endIndex - s.count)]
        }
        if name.elementsEqual("init.mp4".utf8) { return .initSegment(0) }
        if let v = strip("init-", ".mp4").flatMap(number), v > 0 { return .initSegment(v) }
        if let n = strip("seg-", ".m4s").flatMap(number) { return .segment(n) }
        if let stem = strip("part-", ".m4s"), let dot = stem.firstIndex(of: UInt8(ascii: ".")),
           let m = number(stem[..<dot]), let i = number(stem[(dot + 1)...]) {
            return .part(m, i)
        }
        return nil
    }
}
