/// One sample of a fragment: its timing and bytes (H.264 as 4-byte length-prefixed NAL units).
public struct FragmentSample: Equatable, Sendable {
    public var duration: UInt32
    public var compositionOffset: Int32
    public var isSync: Bool
    public var data: [UInt8]

    public init(duration: UInt32, compositionOffset: Int32 = 0, isSync: Bool, data: [UInt8]) {
        self.duration = duration
        self.compositionOffset = compositionOffset
        self.isSync = isSync
        self.data = data
    }
}

/// A CMAF chunk (ISO/IEC 23000-19 section 7.3.2.3): `moof` + `mdat` for one track, after the
/// `emsg` boxes of events it carries. A segment is one or more of these; an LL-HLS part is
/// exactly one.
public enum MediaFragment {
    /// sample_depends_on = 2 (does not depend on others).
    static let syncSampleFlags: UInt32 = 0x0200_0000
    /// sample_depends_on = 1, sample_is_non_sync_sample = 1.
    static let nonSyncSampleFlags: UInt32 = 0x0101_0000

    public static func make(sequenceNumber: UInt32, trackID: UInt32 = 1, baseMediaDecodeTime: UInt64, samples: [FragmentSample], events: [EventMessage] = []) -> [UInt8] {
        var b = BoxWriter()
        var dataOffsetPosition = 0
        b.box("moof") { b in
            b.fullBox("mfhd", version: 0, flags: 0) { b in b.u32(sequenceNumber) }
            b.box("traf") { b in
                b.fullBox("tfhd", version: 0, flags: 0x02_0000) { b in b.u32(trackID) }  // default-base-is-moof
                b.fullBox("tfdt", version: 1, flags: 0) { b in b.u64(baseMediaDecodeTime) }
                // data-offset, duration, size, flags and composition offset per sample
                b.fullBox("trun", version: 1, flags: 0x000F01) { b in
                    b.u32(UInt32(samples.count))
                    dataOffsetPosition = b.count
                    b.i32(0)
                    for s in samples {
                        b.u32(s.duration)
                        b.u32(UInt32(s.data.count))
                        b.u32(s.isSync ? syncSampleFlags : nonSyncSampleFlags)
                        b.i32(s.compositionOffset)
                    }
                }
            }
        }
        let moofSize = b.count
        b.patchU32(at: dataOffsetPosition, UInt32(moofSize + 8))
        let payload = samples.reduce(0) { $0 + $1.data.count }
        b.u32(UInt32(payload + 8))
        b.fourCC("mdat")
        for s in samples { b.append(s.data) }
        // Events go before the moof, where a CMAF chunk carries them; the moof's data offset
        // counts from the moof itself, so they move nothing.
        return events.isEmpty ? b.bytes : events.flatMap(\.box) + b.bytes
    }
}
