@testable import MediaFormats
import StorecastTestSupport
import Testing

/// VPS/SPS/PPS from libx265 (ffmpeg 5.1, testsrc2 640x360, Main profile).
enum X265Golden {
    static let vps = Hex.bytes("40010c01ffff01600000030090000003000003003f928090")
    static let sps = Hex.bytes("42010101600000030090000003000003003fa0050201696592a4932bc05a02000003000200000300")
    static let pps = Hex.bytes("4401c172b46240")
}

@Suite struct HEVCParameterSetTests {
    @Test func parsesTheSizeAndProfileFromTheSPS() throws {
        // The capture cuts the SPS after 40 bytes; enough for every field read here.
        let sps = try HEVCSequenceParameterSet(parsing: X265Golden.sps)
        #expect(sps.width == 640 && sps.height == 360)
        #expect(sps.generalProfileTierLevel.first == 0x01, "Main profile, space 0, Main tier")
        #expect(sps.generalProfileTierLevel.last == 0x3F, "level 2.1 (63)")
        #expect(sps.chromaFormatIDC == 1 && sps.bitDepthLuma == 8)
    }

    @Test func recordRoundTripsAndNamesItsCodec() throws {
        let record = try HEVCDecoderConfigurationRecord(vps: X265Golden.vps, sps: X265Golden.sps, pps: X265Golden.pps)
        let parsed = try HEVCDecoderConfigurationRecord(parsing: record.serialized())
        #expect(parsed == record)
        #expect(parsed.units(ofType: 33) == [X265Golden.sps])
        #expect(try parsed.parsedSPS().width == 640)
        #expect(parsed.codecString == "hvc1.1.6.L63.90")
    }

    /// The record header's profile_tier_level says Main 10, level 6.2, High tier; the SPS says
    /// Main, level 2.1: the codecs string follows the SPS.
    @Test func codecStringComesFromTheSPSNotTheHeader() throws {
        var bytes = try HEVCDecoderConfigurationRecord(vps: X265Golden.vps, sps: X265Golden.sps, pps: X265Golden.pps).serialized()
        bytes[1] = 0x22  // space 0, High tier, profile 2
        bytes[12] = 186  // level 6.2
        let record = try HEVCDecoderConfigurationRecord(parsing: bytes)
        #expect(record.generalProfileTierLevel[0] == 0x22, "the header as sent")
        #expect(record.codecString == "hvc1.1.6.L63.90")
    }

    @Test func missingPPSIsAnError() throws {
        var record = try HEVCDecoderConfigurationRecord(vps: X265Golden.vps, sps: X265Golden.sps, pps: X265Golden.pps)
        record.arrays.removeLast()
        #expect(throws: ParameterSetError.missingParameterSet("PPS")) { try HEVCDecoderConfigurationRecord(parsing: record.serialized()) }
    }

    @Test func fuzzedRecordsNeverCrash() throws {
        var rng = SeededGenerator(seed: 265)
        let seed = try HEVCDecoderConfigurationRecord(vps: X265Golden.vps, sps: X265Golden.sps, pps: X265Golden.pps).serialized()
        var parsed = 0
        for _ in 0..<4_000 {
            if let r = try? HEVCDecoderConfigurationRecord(parsing: rng.mutate(seed)) {
                parsed += 1
                if let sps = try? r.parsedSPS() { #expect(sps.width > 0 && sps.height > 0) }
                #expect(r.codecString.hasPrefix("hvc1."))
            }
            _ = try? HEVCSequenceParameterSet(parsing: rng.mutate(X265Golden.sps))
        }
        #expect(parsed > 100, "mutations near valid records reach the deep paths: \(parsed)")
    }
}

@Suite struct EnhancedRTMPTagTests {
    static let golden: [(name: String, hex: String, event: FLVMediaEvent?)] = [
        ("hvc1 SequenceStart (HaishinKit 0x90)", "90 68766331 01020304", .videoConfiguration(codec: .hevc, record: [1, 2, 3, 4])),
        ("hvc1 CodedFrames key with cts 0x12", "91 68766331 000012 00000001 26", .videoFrame(codec: .hevc, keyframe: true, compositionTimeOffset: 0x12, data: [0, 0, 0, 1, 0x26])),
        ("hvc1 CodedFrames inter negative cts (SI24)", "a1 68766331 fffffe 00000001 02", .videoFrame(codec: .hevc, keyframe: false, compositionTimeOffset: -2, data: [0, 0, 0, 1, 0x02])),
        ("hvc1 CodedFramesX", "93 68766331 aabb", .videoFrame(codec: .hevc, keyframe: true, compositionTimeOffset: 0, data: [0xAA, 0xBB])),
        ("av01 CodedFrames has no cts", "91 61763031 0a0b", .videoFrame(codec: .av1, keyframe: true, compositionTimeOffset: 0, data: [0x0A, 0x0B])),
        ("avc1 over Enhanced RTMP", "90 61766331 01", .videoConfiguration(codec: .h264, record: [1])),
        ("metadata is ignored", "84 68766331 02000a636f6c6f72496e666f", nil),
        ("sequence end", "92 68766331", .videoEndOfSequence),
        ("legacy HEVC codec id 12 (Larix, nginx-rtmp forks)", "1c 00 000000 0102", .videoConfiguration(codec: .hevc, record: [1, 2])),
    ]

    @Test(arguments: golden.indices)
    func parses(_ i: Int) throws {
        let c = Self.golden[i]
        #expect(try FLVTag.parseVideo(Hex.bytes(c.hex)) == c.event, "\(c.name)")
    }

    @Test func unknownFourCCAndMultitrackAreClearErrors() {
        #expect(throws: FLVTagError(reason: .unsupportedVideoFourCC("vp09"))) { try FLVTag.parseVideo(Hex.bytes("90 76703039 00")) }
        #expect(throws: FLVTagError(reason: .unsupportedPacketType(6))) { try FLVTag.parseVideo(Hex.bytes("96 68766331 00")) }
        #expect(throws: FLVTagError(reason: .truncated)) { try FLVTag.parseVideo(Hex.bytes("91 6876")) }
    }

    @Test func fuzzedExtendedTagsNeverCrash() {
        var rng = SeededGenerator(seed: 0xE4)
        var frames = 0
        for round in 0..<5_000 {
            if case .videoFrame(_, _, _, let data)? = try? FLVTag.parseVideo(rng.mutate(Hex.bytes(Self.golden[round % Self.golden.count].hex))) {
                frames += 1
                #expect(data.count < 64)
            }
        }
        #expect(frames > 500, "mutated tags still parse as frames: \(frames)")
    }
}
