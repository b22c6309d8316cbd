@testable import MediaFormats
import StorecastTestSupport
import Testing

@Suite struct FLVTagTests {
    static let videoGolden: [(name: String, hex: String, event: FLVMediaEvent?)] = [
        ("avc sequence header", "17 00 000000 01640028ff", .videoConfiguration(codec: .h264, record: [0x01, 0x64, 0x00, 0x28, 0xFF])),
        ("avc keyframe with cts 33", "17 01 000021 00000002 6588", .videoFrame(codec: .h264, keyframe: true, compositionTimeOffset: 33, data: Hex.bytes("00000002 6588"))),
        ("avc inter frame negative cts", "27 01 ffffff 00000001 41", .videoFrame(codec: .h264, keyframe: false, compositionTimeOffset: -1, data: Hex.bytes("00000001 41"))),
        ("avc end of sequence", "17 02 000000", .videoEndOfSequence),
        ("video info frame", "57 00", nil),
    ]

    @Test(arguments: videoGolden.indices)
    func parsesVideo(_ i: Int) throws {
        let c = Self.videoGolden[i]
        #expect(try FLVTag.parseVideo(Hex.bytes(c.hex)) == c.event, "\(c.name)")
    }

    @Test func parsesAudio() throws {
        #expect(try FLVTag.parseAudio(Hex.bytes("af 00 1208")) == .audioConfiguration(codec: .aac, config: [0x12, 0x08]))
        #expect(try FLVTag.parseAudio(Hex.bytes("af 01 2110")) == .audioFrame(codec: .aac, data: [0x21, 0x10]))
    }

    /// Codecs without a sequence header carry their format in every frame.
    static let codedAudioGolden: [(name: String, hex: String, event: FLVMediaEvent)] = [
        ("MP3, MPEG-1 layer 3 at 44.1 kHz stereo", "2f fffb9064 00", .codedAudioFrame(codec: .mp3, sampleRate: 44100, channels: 2, data: Hex.bytes("fffb9064 00"))),
        ("MP3 at 48 kHz: the frame header beats the FLV rate bits", "2f fffb9464 00", .codedAudioFrame(codec: .mp3, sampleRate: 48000, channels: 2, data: Hex.bytes("fffb9464 00"))),
        ("MP3, MPEG-2 at 24 kHz mono", "2e fff394c4 00", .codedAudioFrame(codec: .mp3, sampleRate: 24000, channels: 1, data: Hex.bytes("fff394c4 00"))),
        ("MP3 without a frame header: the FLV rate bits", "2a 0102", .codedAudioFrame(codec: .mp3, sampleRate: 22050, channels: 1, data: [1, 2])),
        ("G.711 A-law mono", "72 d5d5", .codedAudioFrame(codec: .g711ALaw, sampleRate: 8000, channels: 1, data: [0xD5, 0xD5])),
        ("G.711 µ-law stereo", "83 ffff", .codedAudioFrame(codec: .g711MuLaw, sampleRate: 8000, channels: 2, data: [0xFF, 0xFF])),
    ]

    /// Enhanced RTMP v2 audio: sound format 9, packet type, FourCC.
    static let enhancedAudioGolden: [(name: String, hex: String, event: FLVMediaEvent)] = [
        ("Opus sequence start (OpusHead)", "90 4f707573 4f707573486561640102380180bb0000000000",
         .audioConfiguration(codec: .opus, config: Hex.bytes("4f707573486561640102380180bb0000000000"))),
        ("Opus coded frame", "91 4f707573 fcfffe", .audioFrame(codec: .opus, data: [0xFC, 0xFF, 0xFE])),
        ("AAC sequence start", "90 6d703461 1210", .audioConfiguration(codec: .aac, config: [0x12, 0x10])),
        ("AAC coded frame", "91 6d703461 2110", .audioFrame(codec: .aac, data: [0x21, 0x10])),
        ("MP3 coded frame", "91 2e6d7033 fffb9064 00", .codedAudioFrame(codec: .mp3, sampleRate: 44100, channels: 2, data: Hex.bytes("fffb9064 00"))),
    ]

    @Test(arguments: enhancedAudioGolden.indices)
    func parsesEnhancedAudio(_ i: Int) throws {
        let c = Self.enhancedAudioGolden[i]
        #expect(try FLVTag.parseAudio(Hex.bytes(c.hex)) == c.event, "\(c.name)")
    }

    @Test func refusesEnhancedAudioItCannotTranscode() {
        #expect(throws: FLVTagError(reason: .unsupportedAudioFourCC("fLaC"))) { try FLVTag.parseAudio(Hex.bytes("91 664c6143 00")) }
        #expect(throws: FLVTagError(reason: .unsupportedPacketType(5))) { try FLVTag.parseAudio(Hex.bytes("95 4f707573 00")) }  // multitrack
    }

    @Test func opusHeadGivesChannelsAndPreSkip() throws {
        let head = try OpusHead(parsing: Hex.bytes("4f707573486561640102380180bb0000000000"))
        #expect(head.channels == 2 && head.preSkip == 312 && head.inputSampleRate == 48000 && head.mappingFamily == 0)
        #expect(throws: AudioConfigError.malformed("not an OpusHead")) { try OpusHead(parsing: Array("OpusTags".utf8) + [1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0]) }
        #expect(throws: AudioConfigError.truncated) { try OpusHead(parsing: Array("OpusHead".utf8) + [1]) }
    }

    @Test(arguments: codedAudioGolden.indices)
    func parsesCodedAudio(_ i: Int) throws {
        let c = Self.codedAudioGolden[i]
        #expect(try FLVTag.parseAudio(Hex.bytes(c.hex)) == c.event, "\(c.name)")
    }

    @Test func refusesOtherCodecsWithAClearReason() {
        #expect(throws: FLVTagError(reason: .unsupportedVideoCodec(2))) { try FLVTag.parseVideo(Hex.bytes("12 00")) }
        #expect(throws: FLVTagError(reason: .unsupportedAudioFormat(11))) { try FLVTag.parseAudio(Hex.bytes("b6 00")) }  // Speex
        #expect(FLVTagError(reason: .unsupportedVideoCodec(2)).description.contains("H.264, and HEVC or AV1 over Enhanced RTMP, are supported"))
    }

    @Test func truncatedAndEmptyTagsAreErrors() {
        #expect(throws: FLVTagError(reason: .truncated)) { try FLVTag.parseVideo([0x17, 0x01, 0x00]) }
        #expect(throws: FLVTagError(reason: .empty)) { try FLVTag.parseAudio([]) }
    }

    @Test func fuzzedTagsNeverCrash() {
        var rng = SeededGenerator(seed: 9)
        var audio = 0
        for round in 0..<5_000 {
            let seed = Hex.bytes(Self.videoGolden[round % Self.videoGolden.count].hex)
            _ = try? FLVTag.parseVideo(rng.mutate(seed))
            let input = rng.mutate(Hex.bytes("af 00 1208"))
            if let event = try? FLVTag.parseAudio(input) {
                audio += 1
                if case .audioConfiguration(.aac, let config) = event { #expect(config.count == input.count - 2) }
            }
        }
        #expect(audio > 500, "mutated AAC tags still parse: \(audio)")
    }
}

@Suite struct AudioSpecificConfigTests {
    @Test(arguments: [
        ("ffmpeg-aac-lc-44100-mono", "1208", 2, 44100, 1, "mp4a.40.2"),
        ("aac-lc-48000-stereo", "1190", 2, 48000, 2, "mp4a.40.2"),
        ("he-aac-24000-stereo", "2b10", 5, 24000, 2, "mp4a.40.5"),
    ])
    func parses(_ name: String, hex: String, type: Int, rate: Int, channels: Int, codec: String) throws {
        let asc = try AudioSpecificConfig(parsing: Hex.bytes(hex))
        #expect(Int(asc.objectType) == type, "\(name)")
        #expect(asc.sampleRate == rate)
        #expect(asc.channels == channels)
        #expect(asc.codecString == codec)
    }

    @Test func invalidSampleRateIndexIsAnError() {
        #expect(throws: AudioConfigError.invalidSampleRateIndex(13)) { try AudioSpecificConfig(parsing: [0x16, 0x88]) }
    }

    @Test func truncatedIsAnError() {
        #expect(throws: AudioConfigError.truncated) { try AudioSpecificConfig(parsing: [0x12]) }
    }
}
