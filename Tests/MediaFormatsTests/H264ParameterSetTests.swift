@testable import MediaFormats
import StorecastTestSupport
import Testing

/// SPS/PPS from libx264 (ffmpeg 5.1, testsrc2), named after how they were made.
let spsGolden: [(name: String, sps: String, pps: String, width: Int, height: Int, profile: UInt8, codec: String)] = [
    ("x264-high-854x480 (cropped width)", "6764001facd940d83de6f0110000030001000003003c0f183196", "68ebe3cb22c0", 854, 480, 100, "avc1.64001F"),
    ("x264-main-1920x1080 (cropped height, emulation prevention)", "674d4028eca03c0113f2e022000003000200000300781e30632c", "68ebe3cb20", 1920, 1080, 77, "avc1.4D4028"),
    ("x264-baseline-320x240", "6742c00dd90141fb0110000003001000000303c0f142a480", "68cb83cb20", 320, 240, 66, "avc1.42C00D"),
    ("x264-high-720x1280 (portrait phone)", "6764001facd940b40a1b0110000003001000000303c0f1831960", "68ebe3cb22c0", 720, 1280, 100, "avc1.64001F"),
]

@Suite struct H264ParameterSetTests {
    @Test(arguments: spsGolden.indices)
    func parsesSize(_ i: Int) throws {
        let c = spsGolden[i]
        let sps = try H264SequenceParameterSet(parsing: Hex.bytes(c.sps))
        #expect(sps.width == c.width, "\(c.name)")
        #expect(sps.height == c.height, "\(c.name)")
        #expect(sps.profileIDC == c.profile)
    }

    @Test(arguments: spsGolden.indices)
    func configurationRecordRoundTrips(_ i: Int) throws {
        let c = spsGolden[i]
        let record = try AVCDecoderConfigurationRecord(sequenceParameterSets: [Hex.bytes(c.sps)], pictureParameterSets: [Hex.bytes(c.pps)])
        #expect(record.codecString == c.codec)
        let parsed = try AVCDecoderConfigurationRecord(parsing: record.serialized())
        #expect(parsed == record)
        #expect(try parsed.parsedSPS().width == c.width)
    }

    /// A publisher whose record header disagrees with its SPS (header says Baseline 3.0, the SPS
    /// is High 3.1): the codecs string follows the SPS, which is what the decoder will see.
    @Test(arguments: spsGolden.indices)
    func codecStringComesFromTheSPSNotTheHeader(_ i: Int) throws {
        let c = spsGolden[i]
        var bytes = try AVCDecoderConfigurationRecord(sequenceParameterSets: [Hex.bytes(c.sps)], pictureParameterSets: [Hex.bytes(c.pps)]).serialized()
        bytes[1] = 0x42; bytes[2] = 0xE0; bytes[3] = 0x1E
        let record = try AVCDecoderConfigurationRecord(parsing: bytes)
        #expect(record.profileIndication == 0x42, "the header as sent")
        #expect(record.codecString == c.codec, "\(c.name)")
    }

    @Test func configurationRecordLayout() throws {
        let record = try AVCDecoderConfigurationRecord(sequenceParameterSets: [Hex.bytes(spsGolden[2].sps)], pictureParameterSets: [Hex.bytes(spsGolden[2].pps)])
        // version 1, profile, compat, level, 0xFF (4-byte lengths), 0xE1 (one SPS), length 24, …
        #expect(Hex.string(Array(record.serialized().prefix(8))) == "0142c00dffe10018")
    }

    @Test func truncatedRecordIsAnError() {
        #expect(throws: ParameterSetError.truncated) { try AVCDecoderConfigurationRecord(parsing: [1, 0x64, 0, 0x1F, 0xFF, 0xE1, 0x00, 0x30, 0x67]) }
    }

    @Test func recordWithoutPPSIsAnError() {
        #expect(throws: ParameterSetError.missingParameterSet("PPS")) {
            try AVCDecoderConfigurationRecord(parsing: Hex.bytes("01 42c00d ff e1 0004 6742c00d 00"))
        }
    }

    @Test func notAnSPSIsAnError() {
        #expect(throws: ParameterSetError.self) { try H264SequenceParameterSet(parsing: Hex.bytes("68ebe3cb22c0")) }
    }

    @Test func fuzzedParameterSetsNeverCrash() throws {
        var rng = SeededGenerator(seed: 264)
        for round in 0..<4_000 {
            let c = spsGolden[round % spsGolden.count]
            _ = try? H264SequenceParameterSet(parsing: rng.mutate(Hex.bytes(c.sps)))
            let record = try AVCDecoderConfigurationRecord(sequenceParameterSets: [Hex.bytes(c.sps)], pictureParameterSets: [Hex.bytes(c.pps)]).serialized()
            if let parsed = try? AVCDecoderConfigurationRecord(parsing: rng.mutate(record)) {
                #expect(parsed.nalLengthSize != 3)
            }
        }
    }
}

@Suite struct NALUnitTests {
    @Test func splitsAnnexBWithThreeAndFourByteStartCodes() {
        let stream = Hex.bytes("00000001 6742 000001 68ce 00000001 65888400")
        #expect(NALUnit.splitAnnexB(stream) == [[0x67, 0x42], [0x68, 0xCE], [0x65, 0x88, 0x84]])
    }

    @Test func lengthPrefixedRoundTrip() throws {
        let units: [[UInt8]] = [[0x65, 1, 2, 3], [0x06], []]
        #expect(try NALUnit.splitLengthPrefixed(NALUnit.lengthPrefixed(units)) == units)
    }

    @Test func lengthPastTheEndIsAnError() {
        #expect(throws: ParameterSetError.truncated) { try NALUnit.splitLengthPrefixed([0, 0, 0, 9, 0x65]) }
    }

    @Test func emulationPreventionIsRemoved() {
        #expect(NALUnit.removeEmulationPrevention(Hex.bytes("00 00 03 01 00 00 03 00 00 03")) == Hex.bytes("00 00 01 00 00 00 00"))
    }
}
