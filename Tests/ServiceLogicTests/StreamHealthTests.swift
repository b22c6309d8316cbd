@testable import Packager
import Testing

/// A live stream's health as its viewers would feel it (issue 16), as a golden table: a
/// publisher's media over time, judged once a second; the reports are what the packager tells
/// webhooks (`stream.health_changed`) and the live status.
@Suite struct StreamHealthTests {
    /// What the publisher sends: video at `fps` with a keyframe every `gop` seconds, audio every
    /// 23 ms, each within its spans of seconds.
    struct Show {
        var fps = 30.0
        var gop = 2.0
        var video: [ClosedRange<Double>] = [0...30]
        var audio: [ClosedRange<Double>] = [0...30]
        var hasVideo = true
    }

    /// (second of the report, state, reason codes)
    typealias Expected = [(at: Int, state: StreamHealth.State, codes: [String])]

    static let cases: [(name: String, show: Show, expected: Expected)] = [
        ("a steady show is healthy once it can be judged", Show(), [(5, .healthy, [])]),
        ("a stalled publisher is unhealthy, then healthy again",
         Show(video: [0...10, 20...30], audio: [0...10, 20...30]), [(5, .healthy, []), (14, .unhealthy, ["stalled"]), (26, .healthy, [])]),
        ("video stops while audio goes on (the app in the background)",
         Show(video: [0...10, 20...30]), [(5, .healthy, []), (17, .degraded, ["video_missing"]), (26, .healthy, [])]),
        ("a 2 s stall is not reported", Show(video: [0...10, 12...30], audio: [0...10, 12...30]), [(5, .healthy, [])]),
        ("keyframes every 6 s", Show(gop: 6), [(8, .degraded, ["sparse_keyframes"])]),
        ("8 frames a second", Show(fps: 8), [(8, .degraded, ["low_frame_rate"])]),
        ("an audio-only show is healthy", Show(video: [], hasVideo: false), [(5, .healthy, [])]),
        ("a show that never sends anything is unhealthy", Show(video: [], audio: []), [(5, .unhealthy, ["stalled"])]),
    ]

    @Test(arguments: cases.indices)
    func reports(_ i: Int) {
        let c = Self.cases[i]
        let zero = ContinuousClock.now
        func at(_ s: Double) -> ContinuousClock.Instant { zero.advanced(by: .milliseconds(Int((s * 1000).rounded()))) }
        // Every unit, in time order: (time, track, keyframe). Video is track 1, audio 2.
        var units: [(Double, UInt8, Bool)] = []
        for span in c.show.video {
            var t = span.lowerBound, n = 0
            while t < span.upperBound {
                units.append((t, 1, n % Int(c.show.gop * c.show.fps) == 0))
                n += 1
                t = span.lowerBound + Double(n) / c.show.fps
            }
        }
        for span in c.show.audio { for t in stride(from: span.lowerBound, to: span.upperBound, by: 0.023) { units.append((t, 2, true)) } }
        units.sort { $0.0 < $1.0 }
        var health = StreamHealth()
        health.announce(streamID: 7, sessionID: 70, videoTracks: c.show.hasVideo ? [1, 3] : [], audioTracks: [2], now: at(0))
        var reports: [(Int, StreamHealth.State, [String])] = []
        var next = 0
        for second in 1...30 {
            while next < units.count, units[next].0 < Double(second) {
                health.unit(streamID: 7, track: units[next].1, keyframe: units[next].2, now: at(units[next].0))
                next += 1
            }
            for r in health.evaluate(now: at(Double(second))) {
                #expect(r.streamID == 7 && r.sessionID == 70)
                #expect(r.reasons.allSatisfy { !$0.message.isEmpty })
                reports.append((second, r.state, r.reasons.map(\.code)))
            }
        }
        let got = reports.map { "\($0.0) \($0.1) \($0.2)" }, want = c.expected.map { "\($0.at) \($0.state) \($0.codes)" }
        #expect(got == want, "\(c.name)")
    }

    @Test func anEndedStreamIsNoLongerJudgedAndANewSessionStartsOver() {
        let zero = ContinuousClock.now
        var health = StreamHealth()
        health.announce(streamID: 1, sessionID: 10, videoTracks: [], audioTracks: [2], now: zero)
        health.ended(streamID: 1)
        #expect((1...10).flatMap { health.evaluate(now: zero.advanced(by: .seconds($0))) }.isEmpty, "nothing about an ended stream")
        health.announce(streamID: 1, sessionID: 11, videoTracks: [], audioTracks: [2], now: zero.advanced(by: .seconds(10)))
        let reports = (11...20).flatMap { health.evaluate(now: zero.advanced(by: .seconds($0))) }
        #expect(reports.map(\.sessionID) == [11] && reports.first?.state == .unhealthy, "the new session, silent: \(reports)")
    }
}
