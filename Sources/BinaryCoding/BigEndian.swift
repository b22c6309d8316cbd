extension UInt32 {
    /// The four bytes of the value, most significant first.
    public var bigEndianBytes: [UInt8] {
        [UInt8(self >> 24), UInt8(self >> 16 & 0xFF), UInt8(self >> 8 & 0xFF), UInt8(self & 0xFF)]
    }
}
