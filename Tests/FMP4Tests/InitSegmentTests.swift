@testable import FMP4
import MediaFormats
import StorecastTestSupport
import Testing

@Suite struct InitSegmentTests {
    static let avcC = try! AVCDecoderConfigurationRecord(
        sequenceParameterSets: [Hex.bytes("6742c00dd90141fb0110000003001000000303c0f142a480")],
        pictureParameterSets: [Hex.bytes("68cb83cb20")]).serialized()

    @Test func videoInitHasTheCMAFBoxTree() throws {
        let bytes = InitSegment.make(TrackDescription(timescale: 90_000, media: .h264(avcC: Self.avcC, width: 320, height: 240)))
        let tree = BoxTree.parse(bytes)
        #expect(tree.map(\.type) == ["ftyp", "moov"])
        #expect(tree.reduce(0) { $0 + $1.size } == bytes.count, "boxes cover the file exactly")
        let moov = try #require(BoxTree.find(tree, ["moov"]))
        #expect(moov.children.map(\.type) == ["mvhd", "trak", "mvex"])
        let mdhd = try #require(BoxTree.find(tree, ["moov", "trak", "mdia", "mdhd"]))
        #expect(BoxTree.u32(mdhd.payload, 12) == 90_000, "track timescale")
        let hdlr = try #require(BoxTree.find(tree, ["moov", "trak", "mdia", "hdlr"]))
        #expect(String(decoding: hdlr.payload[hdlr.payload.startIndex + 8..<hdlr.payload.startIndex + 12], as: UTF8.self) == "vide")
        let stsd = try #require(BoxTree.find(tree, ["moov", "trak", "mdia", "minf", "stbl", "stsd"]))
        #expect(String(decoding: stsd.payload[stsd.payload.startIndex + 12..<stsd.payload.startIndex + 16], as: UTF8.self) == "avc1")
        // The avcC is carried byte for byte.
        let avcCRange = try #require(bytes.indices.first { i in i + 4 <= bytes.count && bytes[i..<i + 4] == ArraySlice(Array("avcC".utf8)) })
        #expect(Array(bytes[(avcCRange + 4)..<(avcCRange + 4 + Self.avcC.count)]) == Self.avcC)
        let tkhd = try #require(BoxTree.find(tree, ["moov", "trak", "tkhd"]))
        #expect(BoxTree.u32(tkhd.payload, 76) == 320 << 16)
        #expect(BoxTree.u32(tkhd.payload, 80) == 240 << 16)
    }

    /// libx265's parameter sets (ffmpeg 5.1, testsrc2 640x360, Main profile) as an `hvc1` entry.
    @Test func hevcInitIsHvc1WithTheHvcC() throws {
        let hvcC = try HEVCDecoderConfigurationRecord(
            vps: Hex.bytes("40010c01ffff01600000030090000003000003003f928090"),
            sps: Hex.bytes("42010101600000030090000003000003003fa0050201696592a4932bc05a02000003000200000300"),
            pps: Hex.bytes("4401c172b46240")).serialized()
        let bytes = InitSegment.make(TrackDescription(timescale: 90_000, media: .hevc(hvcC: hvcC, width: 640, height: 360)))
        let tree = BoxTree.parse(bytes)
        #expect(tree.reduce(0) { $0 + $1.size } == bytes.count)
        let stsd = try #require(BoxTree.find(tree, ["moov", "trak", "mdia", "minf", "stbl", "stsd"]))
        #expect(String(decoding: stsd.payload[stsd.payload.startIndex + 12..<stsd.payload.startIndex + 16], as: UTF8.self) == "hvc1")
        let at = try #require(bytes.indices.first { i in i + 4 <= bytes.count && bytes[i..<i + 4] == ArraySlice(Array("hvcC".utf8)) })
        #expect(Array(bytes[(at + 4)..<(at + 4 + hvcC.count)]) == hvcC, "the hvcC is carried byte for byte")
        #expect(BoxTree.find(tree, ["moov", "trak", "mdia", "minf", "vmhd"]) != nil)
        let tkhd = try #require(BoxTree.find(tree, ["moov", "trak", "tkhd"]))
        #expect(BoxTree.u32(tkhd.payload, 76) == 640 << 16 && BoxTree.u32(tkhd.payload, 80) == 360 << 16)
    }

    @Test func audioInitCarriesEsdsWithTheAudioSpecificConfig() throws {
        let bytes = InitSegment.make(TrackDescription(timescale: 48_000, media: .aac(audioSpecificConfig: [0x11, 0x90], sampleRate: 48_000, channels: 2), bitrate: 128_000))
        let tree = BoxTree.parse(bytes)
        let hdlr = try #require(BoxTree.find(tree, ["moov", "trak", "mdia", "hdlr"]))
        #expect(String(decoding: hdlr.payload[hdlr.payload.startIndex + 8..<hdlr.payload.startIndex + 12], as: UTF8.self) == "soun")
        #expect(BoxTree.find(tree, ["moov", "trak", "mdia", "minf", "smhd"]) != nil)
        // DecoderSpecificInfo: tag 5, length 2, the ASC.
        #expect(Hex.string(bytes).contains("05021190"))
    }

    @Test func descriptorLengthsUseSevenBitGroups() {
        #expect(InitSegment.descriptor(0x05, [1, 2]) == [0x05, 0x02, 1, 2])
        #expect(Array(InitSegment.descriptor(0x04, Array(repeating: 0, count: 200)).prefix(3)) == [0x04, 0x81, 0x48])
    }
}

@Suite struct MediaFragmentTests {
    @Test func dataOffsetPointsAtTheFirstSampleInMdat() throws {
        let samples = [
            FragmentSample(duration: 3000, isSync: true, data: [1, 2, 3]),
            FragmentSample(duration: 3003, compositionOffset: -10, isSync: false, data: [4, 5]),
        ]
        let bytes = MediaFragment.make(sequenceNumber: 7, baseMediaDecodeTime: 123_456_789_012, samples: samples)
        let tree = BoxTree.parse(bytes)
        #expect(tree.map(\.type) == ["moof", "mdat"])
        let trun = try #require(BoxTree.find(tree, ["moof", "traf", "trun"]))
        #expect(BoxTree.u32(trun.payload, 4) == 2, "sample count")
        let dataOffset = Int(BoxTree.u32(trun.payload, 8))
        #expect(Array(bytes[dataOffset..<dataOffset + 5]) == [1, 2, 3, 4, 5])
        // per sample: duration, size, flags, composition offset
        #expect(BoxTree.u32(trun.payload, 12) == 3000)
        #expect(BoxTree.u32(trun.payload, 16) == 3)
        #expect(BoxTree.u32(trun.payload, 20) == 0x0200_0000, "sync sample")
        #expect(BoxTree.u32(trun.payload, 36) == 0x0101_0000, "non-sync sample")
        #expect(Int32(bitPattern: BoxTree.u32(trun.payload, 40)) == -10)
        let tfdt = try #require(BoxTree.find(tree, ["moof", "traf", "tfdt"]))
        #expect(UInt64(BoxTree.u32(tfdt.payload, 4)) << 32 | UInt64(BoxTree.u32(tfdt.payload, 8)) == 123_456_789_012)
        let mfhd = try #require(BoxTree.find(tree, ["moof", "mfhd"]))
        #expect(BoxTree.u32(mfhd.payload, 4) == 7)
    }
}
