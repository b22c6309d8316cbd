import BinaryCoding
import StorecastTestSupport
import Testing

/// Big-endian integers of every width the codecs use, and the byte-block overloads.
@Suite struct ByteWriterTests {
    @Test(arguments: [
        (UInt64(0x0102_0304_0506_0708), 8, "0102030405060708"),
        (0x0102_0304_0506_0708, 4, "05060708"),
        (0xAB_CDEF, 3, "abcdef"),
        (0xFFFF, 2, "ffff"),
        (0x7F, 1, "7f"),
        (0x1234, 0, ""),
    ])
    func writesTheLowBytesBigEndian(_ value: UInt64, _ width: Int, _ hex: String) {
        var w = ByteWriter()
        w.uintBE(value, width)
        #expect(Hex.string(w.bytes) == hex)
    }

    @Test func typedWritersAndBlocks() {
        var w = ByteWriter()
        w.u8(1); w.u16(0x0203); w.u24(0x04_0506); w.u32(0x0708_090A); w.i32(-2); w.i64(-1); w.i24(-3)
        w.u32LE(0x0D0C_0B0A)
        w.append([0xAA, 0xBB]); w.append([0x00, 0xCC, 0xDD][1...]); w.append(Array("é".utf8).reversed())
        [UInt8]([0xEE]).withUnsafeBytes { w.append($0) }
        w.string16("hi"); w.block32([9])
        w.patchU32(at: 3, 0x1122_3344)
        // The patch overwrote bytes 3 to 6 (the u24's last two and the u32's first two).
        #expect(Hex.string(w.bytes) == "010203" + "11223344" + "08090a" + "fffffffe" + "ffffffffffffffff" + "fffffd"
            + "0a0b0c0d" + "aabb" + "ccdd" + "a9c3" + "ee" + "00026869" + "0000000109")
    }
}
