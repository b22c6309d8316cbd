@testable import Packager
import StorecastWire
import Testing

@Suite struct RenditionSegmenterTests {
    static let video = TrackConfig(trackID: 1, kind: .video, codec: "h264", name: "360p", timescale: 90_000, width: 640, height: 360, config: [])

    @Test func cutsOnKeyframesAndHoldsOneSampleBack() {
        var s = RenditionSegmenter(track: Self.video, targetDuration: 2)
        var segments: [PackagedSegment] = []
        for i in 0..<150 {  // 5 s at 30 fps, keyframe every 2 s
            let unit = AccessUnit(streamID: 1, trackID: 1, flags: i % 60 == 0 ? 1 : 0, sequence: UInt64(i), dts: Int64(i) * 3000, compositionOffset: 0, data: [UInt8(i & 0xFF)])
            if let seg = s.append(unit) { segments.append(seg) }
        }
        #expect(segments.map(\.sequence) == [0, 1])
        #expect(segments.map(\.duration) == [2.0, 2.0])
        #expect(segments.map(\.sampleCount) == [60, 60])
        let last = s.finish()
        #expect(last?.sampleCount == 30)
        #expect(last?.sequence == 2)
    }

    @Test func videoBeforeTheFirstKeyframeIsDropped() {
        var s = RenditionSegmenter(track: Self.video, targetDuration: 2)
        _ = s.append(AccessUnit(streamID: 1, trackID: 1, flags: 0, sequence: 1, dts: 0, compositionOffset: 0, data: [1]))
        #expect(s.finish() == nil)
    }

    @Test func discontinuityIsMarkedOnTheNextSegmentOnly() {
        var s = RenditionSegmenter(track: Self.video, targetDuration: 1)
        s.markDiscontinuity()
        var out: [PackagedSegment] = []
        for i in 0..<100 {
            if let seg = s.append(AccessUnit(streamID: 1, trackID: 1, flags: i % 30 == 0 ? 1 : 0, sequence: UInt64(i), dts: Int64(i) * 3000, compositionOffset: 0, data: [1])) { out.append(seg) }
        }
        #expect(out.map(\.discontinuity) == [true, false, false])
    }

    @Test func audioCutsByDuration() {
        let audio = TrackConfig(trackID: 2, kind: .audio, codec: "aac", name: "audio", timescale: 48_000, sampleRate: 48_000, channels: 2, config: [0x11, 0x90])
        var s = RenditionSegmenter(track: audio, targetDuration: 2)
        var out: [PackagedSegment] = []
        for i in 0..<300 {
            if let seg = s.append(AccessUnit(streamID: 1, trackID: 2, flags: 1, sequence: UInt64(i), dts: Int64(i) * 1024, compositionOffset: 0, data: [1])) { out.append(seg) }
        }
        #expect(out.count == 3)
        #expect(out.allSatisfy { abs($0.duration - 2.0) < 0.03 })
    }
}
