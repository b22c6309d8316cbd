/// A minimal ISO BMFF reader for assertions: box types, sizes and payloads by path.
public struct BoxTree {
    public struct Box {
        public var type: String
        public var offset: Int
        public var size: Int
        public var payload: ArraySlice<UInt8>
        public var children: [Box]
    }

    public static let containers: Set<String> = ["moov", "trak", "mdia", "minf", "dinf", "stbl", "mvex", "moof", "traf"]

    public static func parse(_ bytes: [UInt8], from start: Int = 0, to end: Int? = nil) -> [Box] {
        var boxes: [Box] = []
        var p = start
        let limit = end ?? bytes.count
        while p + 8 <= limit {
            let size = Int(bytes[p]) << 24 | Int(bytes[p + 1]) << 16 | Int(bytes[p + 2]) << 8 | Int(bytes[p + 3])
            let type = String(decoding: bytes[p + 4..<p + 8], as: UTF8.self)
            guard size >= 8, p + size <= limit else { break }
            let children = containers.contains(type) ? parse(bytes, from: p + 8, to: p + size) : []
            boxes.append(Box(type: type, offset: p, size: size, payload: bytes[p + 8..<p + size], children: children))
            p += size
        }
        return boxes
    }

    public static func find(_ boxes: [Box], _ path: [String]) -> Box? {
        guard let first = path.first, let box = boxes.first(where: { $0.type == first }) else { return nil }
        return path.count == 1 ? box : find(box.children, Array(path.dropFirst()))
    }

    public static func u32(_ s: ArraySlice<UInt8>, _ at: Int) -> UInt32 {
        let i = s.startIndex + at
        return UInt32(s[i]) << 24 | UInt32(s[i + 1]) << 16 | UInt32(s[i + 2]) << 8 | UInt32(s[i + 3])
    }
}
