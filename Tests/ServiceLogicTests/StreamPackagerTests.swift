import Foundation
@testable import Packager
import StorecastRuntime
import StorecastTestSupport
import StorecastWire
import Testing

/// The packager's segmenting decisions as golden tables: a show's announces, its frames (30 fps,
/// a keyframe every 2 s, every rendition alike) and its end, with what the store lists and the
/// wall clock as parameters, and the actions the shell must carry out (segments by rendition and
/// number, retirements, packages installed, resumptions, the end).
@Suite struct StreamPackagerTests {
    static let config: [UInt8] = [0x01, 0x42, 0xC0, 0x0D, 0xFF, 0xE1, 0x00, 0x18] + ParameterSetFixtures.baselineSPS320x240 + [0x01, 0x00, 0x05, 0x68, 0xCB, 0x83, 0xCB, 0x20]
    static func video(_ id: UInt8, _ name: String, width: UInt16 = 320) -> TrackConfig {
        TrackConfig(trackID: id, kind: .video, codec: "h264", name: name, timescale: 90_000, width: width, height: 240, bitrate: 400_000, config: config)
    }
    static let ladder = [video(1, "360p"), video(2, "240p")]
    static let wall = Date(timeIntervalSince1970: 1_800_000_000)
    static let generation = "mywpiww0"  // 1_800_000_000_000 ms in base 36

    enum Event: Sendable {
        case announce([TrackConfig], discontinuity: Bool = false, listed: [String: Int]? = nil, resumption: PackageResumption? = nil)
        /// Frames `range` of every announced track (a keyframe every 60).
        case frames(Range<Int>)
        case end(String)
    }

    struct Scenario: Sendable, CustomStringConvertible {
        let name: String
        let events: [Event]
        /// The actions from event `from` on.
        let from: Int
        let expected: [String]
        var description: String { name }
    }

    static let started = [Event.announce(ladder), .frames(0..<130)]

    static let scenarios: [Scenario] = [
        Scenario(name: "a show starting: recorded, installed in a new generation, numbered from 1",
                 events: started, from: 0,
                 expected: ["started shop/show", "install 240p 360p mywpiww0", "360p #1", "240p #1", "360p #2", "240p #2"]),
        Scenario(name: "the transcoder's repeated announce changes nothing",
                 events: started + [.announce(ladder), .frames(130..<190)], from: 2,
                 expected: ["360p #3", "240p #3"]),
        Scenario(name: "a reconnect (discontinuity): the open segments close, the next start after EXT-X-DISCONTINUITY",
                 events: started + [.announce(ladder, discontinuity: true), .frames(1200..<1270)], from: 2,
                 expected: ["360p #3", "240p #3", "install  mywpiww0", "360p #4 after a discontinuity", "240p #4 after a discontinuity"]),
        Scenario(name: "a rendition left out of the announce is finished and retired, the others go on",
                 events: started + [.announce([video(1, "360p")]), .frames(130..<190)], from: 2,
                 expected: ["240p #3", "retire 240p", "install  mywpiww0", "360p #3"]),
        Scenario(name: "a changed track (new size): the old segmenter's rest is listed, the new one starts after a discontinuity",
                 events: started + [.announce([video(1, "360p", width: 480), video(2, "240p")]), .frames(130..<250)], from: 2,
                 expected: ["360p #3", "install 360p mywpiww0", "240p #3", "360p #4 after a discontinuity", "240p #4"]),
        Scenario(name: "a new show on a package still listed: numbered on after a discontinuity, in that package",
                 events: [.announce(ladder, listed: ["360p": 7, "240p": 7]), .frames(0..<70)], from: 0,
                 expected: ["started shop/show", "install 240p 360p mywpiww0", "360p #8 after a discontinuity", "240p #8 after a discontinuity"]),
        Scenario(name: "a restarted packager continues its package: the same generation, numbered a margin past the cursor",
                 events: [.announce(ladder, resumption: PackageResumption(generation: "old1", cursors: [
                    "360p": PackageCursor(streamKey: "shop/show", rendition: "360p", generation: "old1", lastSequence: 20, discontinuitySequence: 2),
                    "240p": PackageCursor(streamKey: "shop/show", rendition: "240p", generation: "old1", lastSequence: 20, discontinuitySequence: 2),
                 ])), .frames(0..<70)], from: 0,
                 expected: ["started shop/show", "resumed old1", "install 240p 360p old1", "360p #23 after a discontinuity", "240p #23 after a discontinuity"]),
        Scenario(name: "a resumption is ignored when the package is still in memory",
                 events: [.announce(ladder, listed: ["360p": 4, "240p": 4], resumption: PackageResumption(generation: "old1", cursors: [:])), .frames(0..<70)], from: 0,
                 expected: ["started shop/show", "install 240p 360p mywpiww0", "360p #5 after a discontinuity", "240p #5 after a discontinuity"]),
        Scenario(name: "the end lists every open segment, then ends the package",
                 events: started + [.frames(130..<150), .end("publisher ended")], from: 2,
                 expected: ["360p #3", "240p #3", "ended publisher ended"]),
        Scenario(name: "after the end, units and a second end are dropped",
                 events: started + [.end("idle"), .frames(130..<190), .end("idle")], from: 3,
                 expected: []),
    ]

    static func summary(_ action: StreamPackager.Action) -> String? {
        switch action {
        case .started(_, let key, _, _): "started \(key)"
        case .resumed(_, let generation): "resumed \(generation)"
        case .publish(let output, let rendition, _):
            output.segment.map { "\(rendition) #\($0.sequence)\($0.discontinuity ? " after a discontinuity" : "")" }
        case .retire(_, let renditions): "retire \(renditions.joined(separator: " "))"
        case .refusedTrack(_, let rendition, _): "refused \(rendition)"
        case .install(_, _, _, _, let renditions, let generation): "install \(renditions.keys.sorted().joined(separator: " ")) \(generation)"
        case .spliced(_, let rendition, _): "spliced \(rendition)"
        case .ended(_, let reason): "ended \(reason)"
        case .packaging, .replayedUnitsDropped, .audioCutsMisaligned: nil
        }
    }

    @Test(arguments: scenarios)
    func decides(_ scenario: Scenario) {
        var packager = StreamPackager(configuration: .init(targetDuration: 2, partTarget: 100, chunkTarget: 0))
        var tracks: [TrackConfig] = []
        var actions: [[StreamPackager.Action]] = []
        for event in scenario.events {
            switch event {
            case .announce(let announced, let discontinuity, let listed, let resumption):
                tracks = announced
                let a = StreamAnnounce(streamID: 1, sessionID: 1, tenant: "shop", streamName: "show", discontinuity: discontinuity, tracks: announced)
                actions.append(packager.announce(a, listed: listed, resumption: resumption, wallClock: Self.wall))
            case .frames(let range):
                var step: [StreamPackager.Action] = []
                for f in range {
                    for t in tracks {
                        let u = AccessUnit(streamID: 1, trackID: t.trackID, flags: f % 60 == 0 ? 1 : 0, sequence: UInt64(f), dts: Int64(f) * 3000, compositionOffset: 0, data: [UInt8(f & 0xFF)])
                        step += packager.unit(u, wallClock: { Self.wall }) ?? []
                    }
                }
                actions.append(step)
            case .end(let reason):
                actions.append(packager.end(StreamEnd(streamID: 1, reason: reason)))
            }
        }
        #expect(actions.dropFirst(scenario.from).joined().compactMap(Self.summary) == scenario.expected)
    }

    /// The stream's first unit anchors its wall clock (PROGRAM-DATE-TIME), read once.
    @Test func theWallClockIsReadOnceForTheFirstUnit() {
        var packager = StreamPackager(configuration: .init(targetDuration: 2, partTarget: 100, chunkTarget: 0))
        _ = packager.announce(StreamAnnounce(streamID: 1, sessionID: 1, tenant: "shop", streamName: "show", discontinuity: false, tracks: [Self.video(1, "360p")]),
                              listed: nil, resumption: nil, wallClock: Self.wall)
        var reads = 0
        var first: PackagedSegment?
        for f in 0..<70 {
            let u = AccessUnit(streamID: 1, trackID: 1, flags: f % 60 == 0 ? 1 : 0, sequence: UInt64(f), dts: Int64(f) * 3000, compositionOffset: 0, data: [1])
            for case .publish(let output, _, _) in packager.unit(u, wallClock: { reads += 1; return Self.wall }) ?? [] where first == nil { first = output.segment }
        }
        #expect(reads == 1)
        #expect(first?.programDateTime == Self.wall.timeIntervalSince1970)
        #expect(packager.unit(AccessUnit(streamID: 9, trackID: 1, flags: 1, sequence: 0, dts: 0, compositionOffset: 0, data: [1]), wallClock: { Self.wall }) == nil, "a stream never announced")
    }

    /// A restarted packager keeps the package's wall clock: PROGRAM-DATE-TIME runs on from the
    /// cursor's offset, not from when the first unit reached the new process (hls.js aligns a
    /// playlist that jumped by it, and froze on the gap).
    @Test func aResumedPackageKeepsItsWallClock() {
        var packager = StreamPackager(configuration: .init(targetDuration: 2, partTarget: 100, chunkTarget: 0))
        let offset = 1_700_000_000.25
        let resumption = PackageResumption(generation: "old1", cursors: [
            "360p": PackageCursor(streamKey: "shop/show", rendition: "360p", generation: "old1", lastSequence: 20, discontinuitySequence: 2, age: 1, clockOffset: offset),
        ])
        _ = packager.announce(StreamAnnounce(streamID: 1, sessionID: 1, tenant: "shop", streamName: "show", discontinuity: false, tracks: [Self.video(1, "360p")]),
                              listed: nil, resumption: resumption, wallClock: Self.wall)
        var first: PackagedSegment?
        for f in 600..<670 {  // 20 s into the stream
            let u = AccessUnit(streamID: 1, trackID: 1, flags: f % 60 == 0 ? 1 : 0, sequence: UInt64(f), dts: Int64(f) * 3000, compositionOffset: 0, data: [1])
            for case .publish(let output, _, _) in packager.unit(u, wallClock: { Self.wall }) ?? [] where first == nil { first = output.segment }
        }
        #expect(first?.sequence == 23)
        #expect(first?.programDateTime == offset + 20, "the old clock, not the new process's: \(first?.programDateTime ?? 0)")
    }

    /// A restarted packager lists the media it never had as EXT-X-GAP segments: from where the
    /// last segment it wrote down ended (2 s before it heard the stream again) to its first new
    /// segment (at the next keyframe, 1 s after), under the numbers between, on the old
    /// timeline; the first new segment follows a discontinuity. Gap segments are never served.
    @Test func aResumedPackageListsTheMediaItLostAsGapSegments() throws {
        var packager = StreamPackager(configuration: .init(targetDuration: 2, partTarget: 100, chunkTarget: 0))
        let w = Self.wall.timeIntervalSince1970
        let offset = w + 1 - 20  // stream time 20 s is 1 s after the announce
        let resumption = PackageResumption(generation: "old1", cursors: [
            "360p": PackageCursor(streamKey: "shop/show", rendition: "360p", generation: "old1", lastSequence: 20, discontinuitySequence: 2, age: 1,
                                  clockOffset: offset, lastEnd: w - 2),
        ])
        let actions = packager.announce(StreamAnnounce(streamID: 1, sessionID: 1, tenant: "shop", streamName: "show", discontinuity: false, tracks: [Self.video(1, "360p")]),
                                        listed: nil, resumption: resumption, wallClock: Self.wall)
        var rendition = try #require(actions.lazy.compactMap { action -> RenditionPackage? in
            if case .install(_, _, _, _, let renditions, _) = action { return renditions["360p"] } else { return nil }
        }.first)
        for f in 600..<730 {  // from 20 s, keyframes every 2 s: two whole segments
            let u = AccessUnit(streamID: 1, trackID: 1, flags: f % 60 == 0 ? 1 : 0, sequence: UInt64(f), dts: Int64(f) * 3000, compositionOffset: 0, data: [1])
            for case .publish(let output, _, _) in packager.unit(u, wallClock: { Self.wall }) ?? [] { rendition.add(output, window: 10) }
        }
        // Room for 2 s gone + 4 s (two targets) + 2 s at 2 s a segment: four numbers, 21 to 24.
        #expect(rendition.segments.map(\.sequence) == [21, 22, 23, 24, 25, 26])
        #expect(rendition.segments.map(\.gap) == [true, true, true, true, false, false])
        let lines = rendition.mediaPlaylist(targetDuration: 2, lowLatency: nil).split(separator: "\n").map(String.init)
        let expected = ["#EXT-X-MEDIA-SEQUENCE:21", "#EXT-X-DISCONTINUITY-SEQUENCE:2", "#EXT-X-MAP:URI=\"init-1.mp4\"",
                        "#EXT-X-PROGRAM-DATE-TIME:2027-01-15T07:59:58.000Z", "#EXT-X-GAP", "#EXTINF:0.75000,", "seg-21.m4s",
                        "#EXT-X-PROGRAM-DATE-TIME:2027-01-15T07:59:58.750Z", "#EXT-X-GAP", "#EXTINF:0.75000,", "seg-22.m4s",
                        "#EXT-X-PROGRAM-DATE-TIME:2027-01-15T07:59:59.500Z", "#EXT-X-GAP", "#EXTINF:0.75000,", "seg-23.m4s",
                        "#EXT-X-PROGRAM-DATE-TIME:2027-01-15T08:00:00.250Z", "#EXT-X-GAP", "#EXTINF:0.75000,", "seg-24.m4s",
                        "#EXT-X-DISCONTINUITY", "#EXT-X-PROGRAM-DATE-TIME:2027-01-15T08:00:01.000Z", "#EXTINF:2.00000,", "seg-25.m4s"]
        let from = try #require(lines.firstIndex(of: "#EXT-X-MEDIA-SEQUENCE:21"), "\(lines)")
        #expect(Array(lines[from..<min(lines.count, from + expected.count)]) == expected, "\(lines.joined(separator: "\n"))")
        #expect(rendition.segment(22) == nil && rendition.part(22, 0) == nil, "a gap segment has nothing to serve")
        #expect(rendition.segment(25)?.bytes.isEmpty == false)
        #expect(rendition.averageBitrate == rendition.peakBitrate, "gap segments count in no bit rate")
    }
}
