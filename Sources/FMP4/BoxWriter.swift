import BinaryCoding

/// Writes ISO BMFF boxes (ISO/IEC 14496-12 section 4.2): sizes are patched after the contents.
struct BoxWriter {
    var w = ByteWriter(capacity: 1024)

    var bytes: [UInt8] { w.bytes }

    mutating func box(_ type: String, _ body: (inout BoxWriter) -> Void) {
        let start = w.count
        w.u32(0)
        w.append(Array(type.utf8))
        body(&self)
        w.patchU32(at: start, UInt32(w.count - start))
    }

    mutating func fullBox(_ type: String, version: UInt8, flags: UInt32, _ body: (inout BoxWriter) -> Void) {
        box(type) { b in
            b.w.u8(version)
            b.w.u24(flags)
            body(&b)
        }
    }

    mutating func u8(_ v: UInt8) { w.u8(v) }
    mutating func u16(_ v: UInt16) { w.u16(v) }
    mutating func u24(_ v: UInt32) { w.u24(v) }
    mutating func u32(_ v: UInt32) { w.u32(v) }
    mutating func u64(_ v: UInt64) { w.u64(v) }
    mutating func i32(_ v: Int32) { w.i32(v) }
    mutating func zeros(_ n: Int) { w.append([UInt8](repeating: 0, count: n)) }
    mutating func append(_ b: [UInt8]) { w.append(b) }
    mutating func fourCC(_ s: String) { w.append(Array(s.utf8)) }
    mutating func patchU32(at offset: Int, _ v: UInt32) { w.patchU32(at: offset, v) }
    var count: Int { w.count }

    /// The unity transformation matrix of mvhd and tkhd.
    mutating func unityMatrix() {
        for v: UInt32 in [0x0001_0000, 0, 0, 0, 0x0001_0000, 0, 0, 0, 0x4000_0000] { w.u32(v) }
    }
}
