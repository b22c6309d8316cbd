import BinaryCoding

/// The fields of an HEVC SPS (ITU-T H.265 section 7.3.2.2) that packaging and ladders need.
public struct HEVCSequenceParameterSet: Equatable, Sendable {
    /// general_profile_space … general_level_idc: the 12 bytes of profile_tier_level's general part.
    public var generalProfileTierLevel: [UInt8]
    public var chromaFormatIDC: UInt32
    public var bitDepthLuma: UInt32
    public var bitDepthChroma: UInt32
    public var width: Int
    public var height: Int

    public init(parsing nal: [UInt8]) throws {
        guard nal.count >= 16, (nal[0] >> 1) & 0x3F == 33 else { throw ParameterSetError.invalidSPS("not an SPS NAL unit") }
        let rbsp = NALUnit.removeEmulationPrevention(Array(nal.dropFirst(2)))
        var r = BitReader(rbsp)
        do {
            try r.skip(4)  // sps_video_parameter_set_id
            let maxSubLayersMinus1 = Int(try r.bits(3))
            try r.skip(1)
            var ptl: [UInt8] = []
            for _ in 0..<12 { ptl.append(UInt8(try r.bits(8))) }
            generalProfileTierLevel = ptl
            var subProfile: [Bool] = [], subLevel: [Bool] = []
            for _ in 0..<maxSubLayersMinus1 {
                subProfile.append(try r.bit() == 1)
                subLevel.append(try r.bit() == 1)
            }
            if maxSubLayersMinus1 > 0 { try r.skip(2 * (8 - maxSubLayersMinus1)) }
            for i in 0..<maxSubLayersMinus1 {
                if subProfile[i] { try r.skip(88) }
                if subLevel[i] { try r.skip(8) }
            }
            _ = try r.unsignedExpGolomb()  // sps_seq_parameter_set_id
            chromaFormatIDC = try r.unsignedExpGolomb()
            guard chromaFormatIDC <= 3 else { throw ParameterSetError.invalidSPS("chroma_format_idc \(chromaFormatIDC)") }
            if chromaFormatIDC == 3 { try r.skip(1) }
            var w = Int(try r.unsignedExpGolomb())
            var h = Int(try r.unsignedExpGolomb())
            if try r.bit() == 1 {  // conformance_window_flag
                let subW = chromaFormatIDC == 1 || chromaFormatIDC == 2 ? 2 : 1
                let subH = chromaFormatIDC == 1 ? 2 : 1
                let left = Int(try r.unsignedExpGolomb()), right = Int(try r.unsignedExpGolomb())
                let top = Int(try r.unsignedExpGolomb()), bottom = Int(try r.unsignedExpGolomb())
                w -= subW * (left + right)
                h -= subH * (top + bottom)
            }
            let lumaMinus8 = try r.unsignedExpGolomb(), chromaMinus8 = try r.unsignedExpGolomb()
            // H.265 7.4.3.2.1: bit_depth_*_minus8 is 0…8.
            guard lumaMinus8 <= 8, chromaMinus8 <= 8 else { throw ParameterSetError.invalidSPS("bit depth") }
            bitDepthLuma = lumaMinus8 + 8
            bitDepthChroma = chromaMinus8 + 8
            guard w > 0, h > 0, w <= 16384, h <= 16384 else { throw ParameterSetError.invalidSPS("size \(w)x\(h)") }
            width = w
            height = h
        } catch is ByteReaderError {
            throw ParameterSetError.invalidSPS("truncated")
        }
    }
}

/// ISO/IEC 14496-15 section 8.3.3.1: the `hvcC` payload, also Enhanced RTMP's HEVC SequenceStart.
public struct HEVCDecoderConfigurationRecord: Equatable, Sendable {
    public static let maximumArrays = 16
    public static let maximumNALUnitsPerArray = 32

    /// The 12 general profile/tier/level bytes (profile space, tier, profile, compatibility
    /// flags, constraint flags, level).
    public var generalProfileTierLevel: [UInt8]
    public var chromaFormat: UInt8
    public var bitDepthLumaMinus8: UInt8
    public var bitDepthChromaMinus8: UInt8
    public var nalLengthSize: Int
    /// NAL unit arrays by type (32 VPS, 33 SPS, 34 PPS, 39/40 SEI).
    public var arrays: [(type: UInt8, units: [[UInt8]])]

    public static func == (a: Self, b: Self) -> Bool {
        a.generalProfileTierLevel == b.generalProfileTierLevel && a.chromaFormat == b.chromaFormat && a.nalLengthSize == b.nalLengthSize
            && a.bitDepthLumaMinus8 == b.bitDepthLumaMinus8 && a.bitDepthChromaMinus8 == b.bitDepthChromaMinus8
            && a.arrays.map(\.type) == b.arrays.map(\.type) && a.arrays.map(\.units) == b.arrays.map(\.units)
    }

    public func units(ofType type: UInt8) -> [[UInt8]] { arrays.first { $0.type == type }?.units ?? [] }

    public init(vps: [UInt8], sps: [UInt8], pps: [UInt8]) throws {
        let parsed = try HEVCSequenceParameterSet(parsing: sps)
        generalProfileTierLevel = parsed.generalProfileTierLevel
        chromaFormat = UInt8(parsed.chromaFormatIDC)
        bitDepthLumaMinus8 = UInt8(parsed.bitDepthLuma - 8)
        bitDepthChromaMinus8 = UInt8(parsed.bitDepthChroma - 8)
        nalLengthSize = 4
        arrays = [(32, [vps]), (33, [sps]), (34, [pps])]
    }

    public init(parsing bytes: [UInt8]) throws {
        var r = ByteReader(bytes)
        do {
            let version = try r.u8()
            guard version == 1 else { throw ParameterSetError.unsupportedConfigurationVersion(version) }
            generalProfileTierLevel = [try r.u8()] + (try r.read(11))
            _ = try r.u16()  // min_spatial_segmentation_idc
            _ = try r.u8()  // parallelismType
            chromaFormat = try r.u8() & 0x03
            bitDepthLumaMinus8 = try r.u8() & 0x07
            bitDepthChromaMinus8 = try r.u8() & 0x07
            _ = try r.u16()  // avgFrameRate
            nalLengthSize = Int(try r.u8() & 0x03) + 1
            guard nalLengthSize != 3 else { throw ParameterSetError.invalidNALLengthSize }
            let count = Int(try r.u8())
            guard count <= Self.maximumArrays else { throw ParameterSetError.tooManyParameterSets }
            var arrays: [(UInt8, [[UInt8]])] = []
            for _ in 0..<count {
                let type = try r.u8() & 0x3F
                let n = Int(try r.u16())
                guard n <= Self.maximumNALUnitsPerArray else { throw ParameterSetError.tooManyParameterSets }
                arrays.append((type, try (0..<n).map { _ in try r.read(Int(try r.u16())) }))
            }
            self.arrays = arrays
        } catch is ByteReaderError {
            throw ParameterSetError.truncated
        }
        for (type, name) in [(UInt8(32), "VPS"), (33, "SPS"), (34, "PPS")] where units(ofType: type).isEmpty {
            throw ParameterSetError.missingParameterSet(name)
        }
    }

    public func serialized() -> [UInt8] {
        var w = ByteWriter()
        w.u8(1)
        w.append(generalProfileTierLevel)
        w.u16(0xF000)  // min_spatial_segmentation_idc 0
        w.u8(0xFC)  // parallelismType 0
        w.u8(0xFC | chromaFormat)
        w.u8(0xF8 | bitDepthLumaMinus8)
        w.u8(0xF8 | bitDepthChromaMinus8)
        w.u16(0)  // avgFrameRate
        w.u8(0x0C | UInt8(nalLengthSize - 1))  // constantFrameRate 0, numTemporalLayers 1, temporalIdNested 1
        w.u8(UInt8(arrays.count))
        for (type, units) in arrays {
            w.u8(0x80 | type)
            w.u16(UInt16(units.count))
            for u in units { w.u16(UInt16(u.count)); w.append(u) }
        }
        return w.bytes
    }

    public func parsedSPS() throws -> HEVCSequenceParameterSet {
        guard let sps = units(ofType: 33).first else { throw ParameterSetError.missingParameterSet("SPS") }
        return try HEVCSequenceParameterSet(parsing: sps)
    }

    /// ISO/IEC 14496-15 annex E: `hvc1.<space><profile>.<compat reversed hex>.<L|H><level>.<constraints>`,
    /// from the SPS's profile_tier_level (the record header's copy only when the SPS does not parse).
    public var codecString: String {
        let b = (try? parsedSPS()).map(\.generalProfileTierLevel).flatMap { $0.count == 12 ? $0 : nil } ?? generalProfileTierLevel
        let space = ["", "A", "B", "C"][Int(b[0] >> 6)]
        let tier = b[0] & 0x20 != 0 ? "H" : "L"
        let profile = b[0] & 0x1F
        let compat = UInt32(b[1]) << 24 | UInt32(b[2]) << 16 | UInt32(b[3]) << 8 | UInt32(b[4])
        var reversed: UInt32 = 0
        for i in 0..<32 where compat & (1 << UInt32(i)) != 0 { reversed |= 1 << UInt32(31 - i) }
        var constraints = Array(b[5..<11])
        while constraints.last == 0 { constraints.removeLast() }
        var parts = ["hvc1", "\(space)\(profile)", String(reversed, radix: 16, uppercase: true), "\(tier)\(b[11])"]
        parts += constraints.map { String($0, radix: 16, uppercase: true) }
        return parts.joined(separator: ".")
    }
}
