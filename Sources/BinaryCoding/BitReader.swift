/// MSB-first bit reader with Exp-Golomb codes (H.264/HEVC parameter sets). Throws on overrun.
public struct BitReader: Sendable {
    private let bytes: [UInt8]
    private var bitOffset = 0

    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    public var bitsRemaining: Int { bytes.count * 8 - bitOffset }

    public mutating func bit() throws -> UInt32 {
        guard bitOffset < bytes.count * 8 else { throw ByteReaderError(needed: 1, available: 0) }
        let b = bytes[bitOffset >> 3] >> (7 - UInt8(bitOffset & 7)) & 1
        bitOffset += 1
        return UInt32(b)
    }

    public mutating func bits(_ n: Int) throws -> UInt32 {
        precondition(n <= 32)
        var v: UInt32 = 0
        for _ in 0..<n { v = v << 1 | (try bit()) }
        return v
    }

    public mutating func skip(_ n: Int) throws {
        guard bitsRemaining >= n else { throw ByteReaderError(needed: n, available: bitsRemaining) }
        bitOffset += n
    }

    /// ue(v)
    public mutating func unsignedExpGolomb() throws -> UInt32 {
        var zeros = 0
        while try bit() == 0 {
            zeros += 1
            guard zeros < 32 else { throw ByteReaderError(needed: 32, available: bitsRemaining) }
        }
        if zeros == 0 { return 0 }
        return (UInt32(1) << UInt32(zeros)) - 1 + (try bits(zeros))
    }

    /// se(v)
    public mutating func signedExpGolomb() throws -> Int32 {
        let k = try unsignedExpGolomb()
        return k & 1 == 1 ? Int32((k + 1) / 2) : -Int32(k / 2)
    }
}
