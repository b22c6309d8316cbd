import FFmpegCodecs
import MediaFormats
import StorecastWire
import Testing
@testable import Transcoder

/// The ladder with the real codecs: the passed-through source rendition, and a thinned frame
/// rate under load that keeps every rung.
@Suite struct LadderEncoderTests {
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

    /// A worker that cannot carry a stream at full frame rate thins it in every rung alike:
    /// no rung leaves the ladder (its viewers would freeze), nothing is announced again, and
    /// every rung keeps producing the same frames, keyframes included.
    @Test func aThinnedFrameRateKeepsEveryRungInStep() throws {
        let (config, units) = try Self.source()
        #expect(units.count == 30)
        var settings = TranscoderSettings(preset: "ultrafast", gopSeconds: 0.5, thumbnailInterval: 0)
        settings.fastStart = nil
        let ladder = LadderEncoder(ladder: .field, settings: settings)
        let track = TrackConfig(trackID: 1, kind: .video, codec: "h264", name: "source", timescale: 1000, width: 854, height: 480, config: config)
        var before = try ladder.handle(.streamAnnounce(StreamAnnounce(streamID: 1, sessionID: 1, tenant: "t", streamName: "s", discontinuity: false, tracks: [track])))
        for u in units.prefix(15) { before += try ladder.handle(.accessUnit(u)) }
        #expect(Self.videoTracks(before) == [["480p", "360p"]])
        let rungIDs = Set(before.compactMap { if case .accessUnit(let u) = $0 { u.trackID } else { nil } })
        #expect(rungIDs == [1, 2], "both rungs encode")

        ladder.frameStep = 2
        var after: [WireMessage] = []
        for u in units.dropFirst(15) { after += try ladder.handle(.accessUnit(u)) }
        after += try ladder.handle(.streamEnd(StreamEnd(streamID: 1, reason: "done")))
        let produced = after.compactMap { if case .accessUnit(let u) = $0 { u } else { nil } }
        // The ladder is only repeated (before each keyframe, for a packager that restarted),
        // never changed, and a repeat is never a cut.
        let first = try #require(before.compactMap { if case .streamAnnounce(let a) = $0 { a } else { nil } }.first)
        let repeats = after.compactMap { if case .streamAnnounce(let a) = $0 { a } else { nil } }
        #expect(repeats.allSatisfy { $0.tracks == first.tracks && !$0.discontinuity }, "\(repeats)")
        #expect(repeats.count == produced.filter { $0.isKeyframe && $0.trackID == 1 }.count, "one repeat per ladder keyframe")
        for (i, message) in after.enumerated() {
            guard case .accessUnit(let u) = message, u.isKeyframe, u.trackID == 1 else { continue }
            if case .streamAnnounce = after[i - 1] {} else { Issue.record("the repeat comes right before the keyframe's units") }
        }
        let perRung = Dictionary(grouping: produced, by: \.trackID)
        #expect(Set(perRung.keys) == [1, 2], "every rung keeps producing")
        #expect(perRung[1]?.map(\.dts) == perRung[2]?.map(\.dts), "the rungs carry the same frames")
        #expect(perRung[1]?.map(\.isKeyframe) == perRung[2]?.map(\.isKeyframe), "keyframes stay aligned")
        // 15 frames: one in two encoded, plus the 0.5 s cadence's keyframes wherever they fall.
        let count = perRung[1]?.count ?? 0
        #expect(count >= 7 && count <= 10, "about half the frames: \(count) of 15")
        #expect(ladder.framesThinned == 15 - count, "every frame not encoded is counted as thinned")
        #expect(perRung[1]?.contains { $0.isKeyframe } == true, "the cadence's keyframes are always encoded")
    }
}
