/// Why a reader stopped: the only error the pure parsers throw for truncated input.
public struct ByteReaderError: Error, Equatable, Sendable, CustomStringConvertible {
    public let needed: Int
    public let available: Int
    public var description: String { "truncated input: needed \(needed) bytes, \(available) left" }
}

/// A cursor over bytes that never traps: every read past the end throws ``ByteReaderError``.
public struct ByteReader: Sendable {
    public let bytes: [UInt8]
    public private(set) var offset: Int
    private let end: Int

    public init(_ bytes: [UInt8]) {
        self.bytes = bytes
        self.offset = 0
        self.end = bytes.count
    }

    public init<S: Sequence<UInt8>>(_ bytes: S) { self.init(Array(bytes)) }

    public var remaining: Int { end - offset }
    public var isAtEnd: Bool { offset >= end }

    private func require(_ n: Int) throws {
        guard n >= 0, remaining >= n else { throw ByteReaderError(needed: n, available: remaining) }
    }

    public mutating func u8() throws -> UInt8 {
        try require(1)
        defer { offset += 1 }
        return bytes[offset]
    }

    public func peekU8() throws -> UInt8 {
        try require(1)
        return bytes[offset]
    }

    public mutating func u16() throws -> UInt16 { UInt16(try uintBE(2)) }
    public mutating func u24() throws -> UInt32 { UInt32(try uintBE(3)) }
    public mutating func u32() throws -> UInt32 { UInt32(try uintBE(4)) }
    public mutating func u64() throws -> UInt64 { try uintBE(8) }
    public mutating func i32() throws -> Int32 { Int32(bitPattern: try u32()) }
    public mutating func i64() throws -> Int64 { Int64(bitPattern: try u64()) }

    /// Signed 24-bit big-endian (FLV composition time).
    public mutating func i24() throws -> Int32 {
        let v = try u24()
        return v & 0x80_0000 != 0 ? Int32(bitPattern: v | 0xFF00_0000) : Int32(v)
    }

    public mutating func u32LE() throws -> UInt32 {
        try require(4)
        defer { offset += 4 }
        return UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16 | UInt32(bytes[offset + 3]) << 24
    }

    public mutating func f64() throws -> Double { Double(bitPattern: try u64()) }

    public mutating func uintBE(_ count: Int) throws -> UInt64 {
        try require(count)
        var v: UInt64 = 0
        for i in 0..<count { v = v << 8 | UInt64(bytes[offset + i]) }
        offset += count
        return v
    }

    public mutating func read(_ count: Int) throws -> [UInt8] {
        try require(count)
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    public mutating func readRest() -> [UInt8] {
        defer { offset = end }
        return Array(bytes[offset..<end])
    }

    public mutating func skip(_ count: Int) throws {
        try require(count)
        offset += count
    }

    /// A length-prefixed (u16) UTF-8 string.
    public mutating func string16() throws -> String {
        String(decoding: try read(Int(try u16())), as: UTF8.self)
    }

    /// A length-prefixed (u32) byte block, refused above `limit`.
    public mutating func block32(limit: Int) throws -> [UInt8] {
        let n = Int(try u32())
        guard n <= limit else { throw ByteReaderError(needed: n, available: min(remaining, limit)) }
        return try read(n)
    }
}
