import FFmpegCodecs
import MediaFormats
import StorecastWire
import Testing
@testable import Transcoder

/// Shedding under load with the real codecs: the ladder loses its top rung, announces the
/// smaller ladder, and from then on only the remaining rungs produce units.
@Suite struct LadderSheddingTests {
    /// 30 frames of 854x480 H.264 (an IDR first) from libx264, as ingest would forward them;
    /// with `bFrames`, two B-frames between references (pictures out of decode order).
    static func source(bFrames: Bool = false) throws -> (config: [UInt8], units: [AccessUnit]) {
        var options = H264Encoder.Settings(width: 854, height: 480, bitrate: 1_000_000, preset: bFrames ? "veryfast" : "ultrafast", tune: bFrames ? nil : "zerolatency")
        options.bFrames = bFrames ? 2 : 0
        let encoder = try H264Encoder(options)
        let sets = NALUnit.splitAnnexB(encoder.parameterSets)
        let config = try AVCDecoderConfigurationRecord(
            sequenceParameterSets: sets.filter { NALUnit.type($0) == NALUnit.sps },
            pictureParameterSets: sets.filter { NALUnit.type($0) == NALUnit.pps }).serialized()
        let frame = try VideoFrame(width: 854, height: 480)
        var packets: [EncodedPacket] = []
        for i in 0..<30 {
            frame.fill(luma: UInt8(60 + i * 4), chroma: 128)
            frame.pts = Int64(i) * 3000
            packets += try encoder.encode(frame, forceKeyframe: i == 0)
        }
        packets += try encoder.flush()
        let units = packets.enumerated().map { i, p in
            AccessUnit(streamID: 1, trackID: 1, flags: p.isKeyframe ? AccessUnit.keyframeFlag : 0, sequence: UInt64(i), dts: p.dts / 90,
                       compositionOffset: Int32((p.pts - p.dts) / 90),
                       data: NALUnit.lengthPrefixed(NALUnit.splitAnnexB(p.data).filter { ![NALUnit.sps, NALUnit.pps].contains(NALUnit.type($0)) }))
        }
        return (config, units)
    }

    static func videoTracks(_ messages: [WireMessage]) -> [[String]] {
        messages.compactMap { if case .streamAnnounce(let a) = $0 { a.tracks.filter { $0.kind == .video }.map(\.name) } else { nil } }
    }

    /// The source rendition starts with the publisher's keyframe and keeps every unit from it,
    /// even though the decoder's first frame (which announces the source with the ladder) comes
    /// later; units before the first keyframe (a publish joined mid-GOP) are not passed on.
    @Test func theSourceRenditionStartsAtTheKeyframeAndLosesNothingAfterIt() throws {
        let (config, units) = try Self.source(bFrames: true)
        #expect(units.contains { $0.compositionOffset > 0 }, "pictures out of decode order")
        var settings = TranscoderSettings(preset: "ultrafast", thumbnailInterval: 0)
        settings.sourceRung = true
        let ladder = LadderEncoder(ladder: .field, settings: settings)
        let track = TrackConfig(trackID: 1, kind: .video, codec: "h264", name: "source", timescale: 1000, width: 854, height: 480, config: config)
        var out = try ladder.handle(.streamAnnounce(StreamAnnounce(streamID: 1, sessionID: 1, tenant: "t", streamName: "s", discontinuity: false, tracks: [track])))
        // Two pictures from the middle of a GOP first, then the stream from its IDR.
        for u in [units[5], units[6]] + units { out += try ladder.handle(.accessUnit(u)) }
        let announced = try #require(out.compactMap { if case .streamAnnounce(let a) = $0 { a } else { nil } }.last)
        let sourceID = try #require(announced.tracks.first { $0.name == TrackConfig.sourceName }?.trackID, "\(announced.tracks.map(\.name))")
        let source = out.compactMap { if case .accessUnit(let u) = $0, u.trackID == sourceID { u } else { nil } }
        #expect(source.first?.isKeyframe == true, "starts with the IDR")
        #expect(source.map(\.data) == units.map(\.data), "every unit from the IDR on, in order, nothing before it: \(source.count) of \(units.count)")
        let firstSource = out.firstIndex { if case .accessUnit(let u) = $0 { u.trackID == sourceID } else { false } }
        let announceIndex = out.firstIndex { if case .streamAnnounce(let a) = $0 { a.tracks.contains { $0.trackID == sourceID } } else { false } }
        #expect(announceIndex != nil && firstSource != nil && announceIndex! < firstSource!, "announced before its first unit")
    }

    @Test func shedTopRungAnnouncesTheSmallerLadderAndStopsItsUnits() throws {
        let (config, units) = try Self.source()
        #expect(units.count == 30)
        let ladder = LadderEncoder(ladder: .field, settings: TranscoderSettings(preset: "ultrafast", thumbnailInterval: 0))
        let track = TrackConfig(trackID: 1, kind: .video, codec: "h264", name: "source", timescale: 1000, width: 854, height: 480, config: config)
        var before = try ladder.handle(.streamAnnounce(StreamAnnounce(streamID: 1, sessionID: 1, tenant: "t", streamName: "s", discontinuity: false, tracks: [track])))
        for u in units.prefix(15) { before += try ladder.handle(.accessUnit(u)) }
        #expect(Self.videoTracks(before) == [["480p", "360p"]])
        let rungIDs = Set(before.compactMap { if case .accessUnit(let u) = $0 { u.trackID } else { nil } })
        #expect(rungIDs == [1, 2], "both rungs encode before shedding")

        let shed = ladder.shedTopRung()
        #expect(Self.videoTracks(shed) == [["360p"]], "the smaller ladder is announced")
        var after: [WireMessage] = []
        for u in units.dropFirst(15) { after += try ladder.handle(.accessUnit(u)) }
        let afterIDs = after.compactMap { if case .accessUnit(let u) = $0 { u.trackID } else { nil } }
        #expect(afterIDs.count >= 14 && Set(afterIDs) == [2], "only the 360p rung keeps producing")
        #expect(ladder.shedTopRung().isEmpty, "the last rung is never shed")
        #expect(ladder.rungsShed == 1)
    }
}
