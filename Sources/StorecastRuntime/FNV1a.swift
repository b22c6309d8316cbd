/// FNV-1a, 64 bits: a fast, stable, non-cryptographic hash of bytes, fed incrementally.
/// Used for rendezvous scores and for content ETags. Pure.
public struct FNV1a: Sendable {
    public private(set) var value: UInt64 = 0xcbf2_9ce4_8422_2325

    public init() {}

    public mutating func add<Bytes: Sequence>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        for byte in bytes { value = (value ^ UInt64(byte)) &* 0x100_0000_01b3 }
    }

    public static func hash<Bytes: Sequence>(_ bytes: Bytes) -> UInt64 where Bytes.Element == UInt8 {
        var h = FNV1a()
        h.add(bytes)
        return h.value
    }
}
