// No imports: fuzz/run.sh builds this file into its parser targets.

/// `/live/TENANT/STREAM/GENERATION/RENDITION/FILE` with no query, in plain characters (anything
/// else, percent-escapes included, is the router's to read).
struct MediaPath: Equatable {
    let tenant: String
    let stream: String
    let generation: String
    let rendition: String
    let file: String

    init?(_ path: String) {
        var path = path
        guard let fields = path.withUTF8(Self.fields) else { return nil }
        (tenant, stream, generation, rendition, file) = (fields[0], fields[1], fields[2], fields[3], fields[4])
    }

    /// The five names after `/live/`, read from the path's bytes in one pass (the hot path reads
    /// one for every request it answers).
    private static func fields(_ path: UnsafeBufferPointer<UInt8>) -> [String]? {
        let prefix = "/live/".utf8
        guard path.starts(with: prefix) else { return nil }
        var fields: [String] = []
        fields.reserveCapacity(5)
        var start = prefix.count
        while start <= path.count {
            let end = path[start...].firstIndex(of: UInt8(ascii: "/")) ?? path.count
            let name = path[start..<end]
            guard fields.count < 5, !name.isEmpty, name.allSatisfy(isPlain), !name.elementsEqual(".".utf8), !name.elementsEqual("..".utf8) else { return nil }
            fields.append(String(decoding: name, as: UTF8.self))
            start = end + 1
        }
        return fields.count == 5 ? fields : nil
    }

    private static func isPlain(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "-"), UInt8(ascii: "_"): true
        default: false
        }
    }
}
