import FFmpegCodecs
import MediaFormats
import Testing

/// Real libavcodec/libx264/libswscale through the wrappers.
@Suite struct FFmpegCodecsTests {
    static func frame(width: Int, height: Int, shade: Int) throws -> VideoFrame {
        let f = try VideoFrame(width: width, height: height)
        f.fill(luma: UInt8(truncatingIfNeeded: shade), chroma: 128)
        return f
    }

    @Test func encodeThenDecodeKeepsSizeAndForcedKeyframes() throws {
        let encoder = try H264Encoder(.init(width: 320, height: 240, bitrate: 300_000, frameRate: 30, timescale: 90_000, preset: "ultrafast"))
        let sets = NALUnit.splitAnnexB(encoder.parameterSets)
        let record = try AVCDecoderConfigurationRecord(
            sequenceParameterSets: sets.filter { NALUnit.type($0) == NALUnit.sps },
            pictureParameterSets: sets.filter { NALUnit.type($0) == NALUnit.pps })
        #expect(try record.parsedSPS().width == 320)
        var packets: [EncodedPacket] = []
        for i in 0..<40 {
            let f = try Self.frame(width: 320, height: 240, shade: i * 5)
            f.pts = Int64(i) * 3000
            packets += try encoder.encode(f, forceKeyframe: i % 15 == 0)
        }
        packets += try encoder.flush()
        #expect(packets.count == 40)
        #expect(packets.filter(\.isKeyframe).map { $0.pts / 3000 } == [0, 15, 30], "IDRs exactly where forced")
        let decoder = try VideoDecoder(codec: .h264, configuration: record.serialized())
        var decoded = 0
        for p in packets {
            let avcc = NALUnit.lengthPrefixed(NALUnit.splitAnnexB(p.data))
            for frame in try decoder.decode(avcc, pts: p.pts, dts: p.dts) {
                #expect(frame.width == 320 && frame.height == 240)
                decoded += 1
            }
        }
        decoded += try decoder.flush().count
        #expect(decoded == 40)
    }

    @Test func scalerFollowsASourceSizeChange() throws {
        let scaler = FrameScaler(width: 160, height: 90)
        let a = try scaler.scale(Self.frame(width: 640, height: 360, shade: 200))
        let b = try scaler.scale(Self.frame(width: 1280, height: 720, shade: 50))
        #expect(a.width == 160 && a.height == 90 && b.width == 160 && b.height == 90)
        #expect(abs(Int(a.lumaPlane()[500]) - 200) <= 2)
        #expect(abs(Int(b.lumaPlane()[500]) - 50) <= 2)
    }

    @Test func corruptInputIsAnErrorNotACrash() throws {
        let encoder = try H264Encoder(.init(width: 64, height: 64, bitrate: 100_000, preset: "ultrafast"))
        let sets = NALUnit.splitAnnexB(encoder.parameterSets)
        let record = try AVCDecoderConfigurationRecord(sequenceParameterSets: [sets[0]], pictureParameterSets: [sets[1]])
        let decoder = try VideoDecoder(codec: .h264, configuration: record.serialized())
        FFmpegLogging.silent()
        defer { FFmpegLogging.quiet() }
        for i in 0..<20 {
            // libavcodec either conceals or throws; either way the process survives.
            _ = try? decoder.decode([0, 0, 0, 4, 0x65, UInt8(i), 0xFF, 0x00], pts: Int64(i), dts: Int64(i))
        }
        // …and the same decoder still decodes a good frame afterwards.
        let f = try Self.frame(width: 64, height: 64, shade: 90)
        f.pts = 0
        let packets = try encoder.encode(f, forceKeyframe: true) + encoder.flush()
        let frames = try packets.flatMap { try decoder.decode(NALUnit.lengthPrefixed(NALUnit.splitAnnexB($0.data)), pts: 100, dts: 100) } + decoder.flush()
        #expect(frames.count >= 1)
        #expect(frames.first?.width == 64)
    }
}
