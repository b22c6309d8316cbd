import BinaryCoding

/// ISO/IEC 14496-15 section 5.3.3.1: the `avcC` payload, also the FLV AVC sequence header.
public struct AVCDecoderConfigurationRecord: Equatable, Sendable {
    public static let maximumParameterSets = 32

    public var profileIndication: UInt8
    public var profileCompatibility: UInt8
    public var levelIndication: UInt8
    /// Bytes in each NAL length prefix (1, 2 or 4).
    public var nalLengthSize: Int
    public var sequenceParameterSets: [[UInt8]]
    public var pictureParameterSets: [[UInt8]]

    public init(sequenceParameterSets: [[UInt8]], pictureParameterSets: [[UInt8]], nalLengthSize: Int = 4) throws {
        guard let sps = sequenceParameterSets.first, sps.count >= 4 else { throw ParameterSetError.missingParameterSet("SPS") }
        guard !pictureParameterSets.isEmpty else { throw ParameterSetError.missingParameterSet("PPS") }
        profileIndication = sps[1]
        profileCompatibility = sps[2]
        levelIndication = sps[3]
        self.nalLengthSize = nalLengthSize
        self.sequenceParameterSets = sequenceParameterSets
        self.pictureParameterSets = pictureParameterSets
    }

    public init(parsing bytes: [UInt8]) throws {
        var r = ByteReader(bytes)
        do {
            let version = try r.u8()
            guard version == 1 else { throw ParameterSetError.unsupportedConfigurationVersion(version) }
            profileIndication = try r.u8()
            profileCompatibility = try r.u8()
            levelIndication = try r.u8()
            nalLengthSize = Int(try r.u8() & 0x03) + 1
            guard nalLengthSize != 3 else { throw ParameterSetError.invalidNALLengthSize }
            let spsCount = Int(try r.u8() & 0x1F)
            sequenceParameterSets = try (0..<spsCount).map { _ in try r.read(Int(try r.u16())) }
            let ppsCount = Int(try r.u8())
            guard ppsCount <= Self.maximumParameterSets else { throw ParameterSetError.tooManyParameterSets }
            pictureParameterSets = try (0..<ppsCount).map { _ in try r.read(Int(try r.u16())) }
        } catch is ByteReaderError {
            throw ParameterSetError.truncated
        }
        guard !sequenceParameterSets.isEmpty else { throw ParameterSetError.missingParameterSet("SPS") }
        guard !pictureParameterSets.isEmpty else { throw ParameterSetError.missingParameterSet("PPS") }
    }

    public func serialized() -> [UInt8] {
        var w = ByteWriter()
        w.u8(1)
        w.u8(profileIndication); w.u8(profileCompatibility); w.u8(levelIndication)
        w.u8(0xFC | UInt8(nalLengthSize - 1))
        w.u8(0xE0 | UInt8(sequenceParameterSets.count))
        for sps in sequenceParameterSets { w.u16(UInt16(sps.count)); w.append(sps) }
        w.u8(UInt8(pictureParameterSets.count))
        for pps in pictureParameterSets { w.u16(UInt16(pps.count)); w.append(pps) }
        // High profiles carry chroma and bit depth (14496-15 5.3.3.1.2); players tolerate absence,
        // but write them for conformance when the SPS says so.
        if [100, 110, 122, 144].contains(profileIndication), let sps = try? H264SequenceParameterSet(parsing: sequenceParameterSets[0]) {
            w.u8(0xFC | UInt8(sps.chromaFormatIDC & 3))
            w.u8(0xF8 | UInt8((sps.bitDepthLuma - 8) & 7))
            w.u8(0xF8 | UInt8((sps.bitDepthChroma - 8) & 7))
            w.u8(0)
        }
        return w.bytes
    }

    /// RFC 6381 codecs parameter: `avc1.PPCCLL`, from the SPS itself (profile_idc, the constraint
    /// flags and level_idc follow its NAL header): a publisher's record header can disagree with
    /// its SPS, and a player picks its decoder by this string. The header's copies only without an SPS.
    public var codecString: String {
        let fields = sequenceParameterSets.first.flatMap { $0.count >= 4 ? Array($0[1...3]) : nil }
            ?? [profileIndication, profileCompatibility, levelIndication]
        return "avc1." + fields.map { String(format2hex: $0) }.joined()
    }

    public func parsedSPS() throws -> H264SequenceParameterSet {
        try H264SequenceParameterSet(parsing: sequenceParameterSets[0])
    }
}

extension String {
    init(format2hex v: UInt8) {
        let digits = Array("0123456789ABCDEF")
        self = String([digits[Int(v >> 4)], digits[Int(v & 0xF)]])
    }
}
