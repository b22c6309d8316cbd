import BinaryCoding
/// CMAF header (ISO/IEC 23000-19 section 7.3.1): `ftyp` + `moov` with an empty sample table
/// and `mvex`, for one track.
public enum InitSegment {
    public static func make(_ track: TrackDescription) -> [UInt8] {
        var b = BoxWriter()
        b.box("ftyp") { b in
            b.fourCC("iso6"); b.u32(0)
            for brand in ["iso6", "cmfc", "mp41", "dash"] { b.fourCC(brand) }
        }
        b.box("moov") { b in
            b.fullBox("mvhd", version: 0, flags: 0) { b in
                b.u32(0); b.u32(0)  // creation, modification
                b.u32(1000); b.u32(0)  // timescale, duration
                b.u32(0x0001_0000); b.u16(0x0100); b.zeros(10)
                b.unityMatrix()
                b.zeros(24)
                b.u32(track.trackID + 1)  // next_track_ID
            }
            b.box("trak") { b in
                b.fullBox("tkhd", version: 0, flags: 0x000003) { b in
                    b.u32(0); b.u32(0); b.u32(track.trackID); b.u32(0); b.u32(0)
                    b.zeros(8)
                    b.u16(0); b.u16(0)  // layer, alternate_group
                    b.u16(track.isVideo ? 0 : 0x0100); b.u16(0)
                    b.unityMatrix()
                    if let (width, height) = track.size {
                        b.u32(UInt32(width) << 16); b.u32(UInt32(height) << 16)
                    } else {
                        b.u32(0); b.u32(0)
                    }
                }
                b.box("mdia") { b in
                    b.fullBox("mdhd", version: 0, flags: 0) { b in
                        b.u32(0); b.u32(0); b.u32(track.timescale); b.u32(0)
                        b.u16(0x55C4)  // 'und'
                        b.u16(0)
                    }
                    b.fullBox("hdlr", version: 0, flags: 0) { b in
                        b.u32(0)
                        b.fourCC(track.isVideo ? "vide" : "soun")
                        b.zeros(12)
                        b.append(Array((track.isVideo ? "Storecast Video" : "Storecast Audio").utf8) + [0])
                    }
                    b.box("minf") { b in
                        if track.isVideo {
                            b.fullBox("vmhd", version: 0, flags: 1) { b in b.zeros(8) }
                        } else {
                            b.fullBox("smhd", version: 0, flags: 0) { b in b.zeros(4) }
                        }
                        b.box("dinf") { b in
                            b.fullBox("dref", version: 0, flags: 0) { b in
                                b.u32(1)
                                b.fullBox("url ", version: 0, flags: 1) { _ in }
                            }
                        }
                        b.box("stbl") { b in
                            b.fullBox("stsd", version: 0, flags: 0) { b in
                                b.u32(1)
                                sampleEntry(track, into: &b)
                            }
                            b.fullBox("stts", version: 0, flags: 0) { b in b.u32(0) }
                            b.fullBox("stsc", version: 0, flags: 0) { b in b.u32(0) }
                            b.fullBox("stsz", version: 0, flags: 0) { b in b.u32(0); b.u32(0) }
                            b.fullBox("stco", version: 0, flags: 0) { b in b.u32(0) }
                        }
                    }
                }
            }
            b.box("mvex") { b in
                b.fullBox("trex", version: 0, flags: 0) { b in
                    b.u32(track.trackID); b.u32(1); b.u32(0); b.u32(0); b.u32(0)
                }
            }
        }
        return b.bytes
    }

    private static func sampleEntry(_ track: TrackDescription, into b: inout BoxWriter) {
        switch track.media {
        case .h264(let avcC, let width, let height):
            visualSampleEntry("avc1", width: width, height: height, config: ("avcC", avcC), into: &b)
        case .hevc(let hvcC, let width, let height):
            visualSampleEntry("hvc1", width: width, height: height, config: ("hvcC", hvcC), into: &b)
        case .aac(let asc, let sampleRate, let channels):
            b.box("mp4a") { b in
                b.zeros(6); b.u16(1)
                b.zeros(8)
                b.u16(UInt16(channels)); b.u16(16)
                b.u16(0); b.u16(0)
                b.u32(UInt32(min(sampleRate, 65535)) << 16)
                b.fullBox("esds", version: 0, flags: 0) { b in
                    let decoderSpecific = descriptor(0x05, asc)
                    var config: [UInt8] = [0x40, 0x15, 0, 0, 0]
                    config += track.bitrate.bigEndianBytes + track.bitrate.bigEndianBytes
                    let decoderConfig = descriptor(0x04, config + decoderSpecific)
                    let sl = descriptor(0x06, [0x02])
                    b.append(descriptor(0x03, [0, 1, 0] + decoderConfig + sl))
                }
            }
        }
    }

    /// ISO/IEC 14496-12 VisualSampleEntry with its decoder configuration box.
    private static func visualSampleEntry(_ type: String, width: Int, height: Int, config: (type: String, payload: [UInt8]), into b: inout BoxWriter) {
        b.box(type) { b in
            b.zeros(6); b.u16(1)  // reserved, data_reference_index
            b.zeros(16)  // pre_defined, reserved, pre_defined[3]
            b.u16(UInt16(width)); b.u16(UInt16(height))
            b.u32(0x0048_0000); b.u32(0x0048_0000)
            b.u32(0); b.u16(1)
            b.zeros(32)  // compressorname
            b.u16(0x0018); b.u16(0xFFFF)
            b.box(config.type) { b in b.append(config.payload) }
        }
    }

    /// MPEG-4 descriptor (ISO/IEC 14496-1 section 8.3.3): tag, variable-length size, body.
    static func descriptor(_ tag: UInt8, _ body: [UInt8]) -> [UInt8] {
        var size = body.count
        var lengthBytes: [UInt8] = [UInt8(size & 0x7F)]
        size >>= 7
        while size > 0 {
            lengthBytes.insert(UInt8(size & 0x7F) | 0x80, at: 0)
            size >>= 7
        }
        return [tag] + lengthBytes + body
    }
}

