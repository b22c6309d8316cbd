/// H.264 NAL unit framing: Annex B start codes and ISO length prefixes.
public enum NALUnit {
    public static func type(_ nal: [UInt8]) -> UInt8 { nal.first.map { $0 & 0x1F } ?? 0 }

    public static let sps: UInt8 = 7
    public static let pps: UInt8 = 8
    public static let idr: UInt8 = 5
    public static let accessUnitDelimiter: UInt8 = 9
    public static let sei: UInt8 = 6

    /// Splits an Annex B byte stream at 3- and 4-byte start codes.
    public static func splitAnnexB(_ bytes: [UInt8]) -> [[UInt8]] {
        var units: [[UInt8]] = []
        var i = 0
        var start = -1
        let n = bytes.count
        while i + 2 < n {
            if bytes[i] == 0, bytes[i + 1] == 0, bytes[i + 2] == 1 {
                if start >= 0 {
                    var end = i
                    while end > start, bytes[end - 1] == 0 { end -= 1 }
                    units.append(Array(bytes[start..<end]))
                }
                i += 3
                start = i
            } else {
                i += 1
            }
        }
        if start >= 0, start < n {
            // A NAL unit never ends in a zero byte (rbsp_trailing_bits); zeros here are
            // trailing_zero_8bits of the byte stream.
            var end = n
            while end > start, bytes[end - 1] == 0 { end -= 1 }
            units.append(Array(bytes[start..<end]))
        }
        return units.filter { !$0.isEmpty }
    }

    /// Splits length-prefixed NAL units; throws on a length that runs past the end.
    public static func splitLengthPrefixed(_ bytes: [UInt8], lengthSize: Int = 4) throws -> [[UInt8]] {
        var units: [[UInt8]] = []
        var i = 0
        while i < bytes.count {
            guard i + lengthSize <= bytes.count else { throw ParameterSetError.truncated }
            var len = 0
            for k in 0..<lengthSize { len = len << 8 | Int(bytes[i + k]) }
            i += lengthSize
            guard len <= bytes.count - i else { throw ParameterSetError.truncated }
            units.append(Array(bytes[i..<i + len]))
            i += len
        }
        return units
    }

    public static func lengthPrefixed(_ units: [[UInt8]]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(units.reduce(0) { $0 + $1.count + 4 })
        for u in units {
            let n = UInt32(u.count)
            out += [UInt8(n >> 24), UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF)]
            out += u
        }
        return out
    }

    /// RBSP from a NAL payload: drops the 0x03 in every 0x000003 sequence.
    public static func removeEmulationPrevention(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var zeros = 0
        for b in bytes {
            if zeros >= 2, b == 3 { zeros = 0; continue }
            zeros = b == 0 ? zeros + 1 : 0
            out.append(b)
        }
        return out
    }
}
