/// Appends big-endian integers and byte blocks.
public struct ByteWriter: Sendable {
    public private(set) var bytes: [UInt8]

    public init(capacity: Int = 64) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    public var count: Int { bytes.count }

    public mutating func u8(_ v: UInt8) { bytes.append(v) }
    public mutating func u16(_ v: UInt16) { uintBE(UInt64(v), 2) }
    public mutating func u24(_ v: UInt32) { uintBE(UInt64(v & 0xFF_FFFF), 3) }
    public mutating func u32(_ v: UInt32) { uintBE(UInt64(v), 4) }
    public mutating func u64(_ v: UInt64) { uintBE(v, 8) }
    public mutating func i32(_ v: Int32) { u32(UInt32(bitPattern: v)) }
    public mutating func i64(_ v: Int64) { u64(UInt64(bitPattern: v)) }
    public mutating func i24(_ v: Int32) { u24(UInt32(bitPattern: v)) }
    public mutating func f64(_ v: Double) { u64(v.bitPattern) }

    public mutating func u32LE(_ v: UInt32) {
        bytes.append(UInt8(v & 0xFF)); bytes.append(UInt8(v >> 8 & 0xFF))
        bytes.append(UInt8(v >> 16 & 0xFF)); bytes.append(UInt8(v >> 24 & 0xFF))
    }

    public mutating func uintBE(_ v: UInt64, _ count: Int) {
        precondition((0...8).contains(count), "a big-endian integer of at most 8 bytes")
        withUnsafeBytes(of: v.bigEndian) { bytes.append(contentsOf: $0[(8 - count)...]) }
    }

    /// Bytes as they are. The concrete overloads copy in one go; the generic one (any other
    /// collection) goes through an array, since generic code called from another module is not
    /// specialised and would copy byte by byte.
    public mutating func append(_ data: [UInt8]) { bytes.append(contentsOf: data) }
    public mutating func append(_ data: ArraySlice<UInt8>) { bytes.append(contentsOf: data) }
    public mutating func append<C: Collection<UInt8>>(_ data: C) { bytes.append(contentsOf: Array(data)) }

    public mutating func string16(_ s: String) {
        let utf8 = Array(s.utf8)
        u16(UInt16(min(utf8.count, Int(UInt16.max))))
        append(utf8.prefix(Int(UInt16.max)))
    }

    public mutating func block32(_ data: [UInt8]) {
        u32(UInt32(data.count))
        append(data)
    }

    /// Overwrites a big-endian u32 at `offset` (box sizes written after their contents).
    public mutating func patchU32(at offset: Int, _ v: UInt32) {
        bytes[offset] = UInt8(v >> 24 & 0xFF); bytes[offset + 1] = UInt8(v >> 16 & 0xFF)
        bytes[offset + 2] = UInt8(v >> 8 & 0xFF); bytes[offset + 3] = UInt8(v & 0xFF)
    }
}
