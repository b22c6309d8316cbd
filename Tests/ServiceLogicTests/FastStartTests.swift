@testable import Packager
import StorecastTestSupport
import StorecastWire
import Testing
@testable import Transcoder

/// The transcoder's fast start and the packager's first segments together: whatever time the
/// show's first video frame has on the stream clock (phones that send audio first start video
/// late), and with frame-time jitter, the first segment is short and no segment is longer
/// than the 2 s target rounds to (EXT-X-TARGETDURATION never changes).
@Suite struct FastStartTests {
    /// First video frame's time (ms), and the longest first segment allowed (s).
    static let starts: [(firstFrameMs: Int64, firstSegmentAtMost: Double)] = [
        (0, 1.05), (40, 1.05), (300, 1.05), (900, 1.15), (999, 1.05), (1500, 0.55), (1990, 2.05),
    ]

    @Test(arguments: starts)
    func segmentsStayWithinTheTargetWhereverTheShowStarts(_ c: (firstFrameMs: Int64, firstSegmentAtMost: Double)) {
        var cadence = KeyframeCadence(gopDuration: 2, timescale: 90_000, fastStart: 1)
        let track = TrackConfig(trackID: 1, kind: .video, codec: "h264", name: "360p", timescale: 90_000, width: 640, height: 360, config: [])
        var segmenter = RenditionSegmenter(track: track, targetDuration: 2, firstSequence: 1)
        segmenter.startMinimum = 1.0 / 3
        var segments: [PackagedSegment] = []
        var rng = SeededGenerator(seed: UInt64(c.firstFrameMs))
        for i in 0..<400 {
            // 30 fps in whole milliseconds, each frame up to 8 ms late (a phone's variable rate).
            let ms = c.firstFrameMs + Int64(i) * 1000 / 30 + Int64.random(in: 0...8, using: &rng)
            let pts = ms * 90
            let unit = AccessUnit(streamID: 1, trackID: 1, flags: cadence.isKeyframe(pts: pts) ? AccessUnit.keyframeFlag : 0,
                                  sequence: UInt64(i), dts: pts, compositionOffset: 0, data: [UInt8(i & 0xFF)])
            if let segment = segmenter.append(unit).segment { segments.append(segment) }
        }
        let durations = segments.map(\.duration)
        #expect(durations.count >= 6, "\(durations)")
        #expect(durations.allSatisfy { $0.rounded() <= 2 }, "every EXTINF rounds to at most the 2 s target: \(durations)")
        #expect((durations.first ?? 9) <= c.firstSegmentAtMost, "a short first segment: \(durations)")
    }
}
