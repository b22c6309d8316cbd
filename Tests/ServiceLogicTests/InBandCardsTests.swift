import Foundation
import HLS
@testable import Packager
import StorecastTestSupport
import StorecastWire
import Testing

/// Product cards in band (issue 18) as a golden table: a show's frames and the cards the shell
/// hands the packager, with the wall clock as a parameter, and the `emsg` boxes each rendition's
/// parts then carry (rendition, event id, presentation time, duration, in the track's timescale).
/// The stream's clock is anchored at `wall` on its first frame.
@Suite struct InBandCardsTests {
    static let wall = StreamPackagerTests.wall.timeIntervalSince1970
    static let audio = TrackConfig(trackID: 3, kind: .audio, codec: "aac", name: "audio", timescale: 48_000, sampleRate: 48_000, channels: 2, config: [0x11, 0x90])
    static let tracks = StreamPackagerTests.ladder + [audio]

    static func card(_ n: Int, at start: Double, duration: Double? = 4) -> DateRange {
        DateRange(id: "highlight-\(n)", classValue: HighlightBook.dateRangeClass, startDate: start, duration: duration,
                  attributes: [DateRange.Attribute(name: "X-TITLE", value: "Red dress")])
    }

    enum Step: Sendable {
        /// An announce of session `session` at `at` (seconds since 1970; the first starts the stream).
        case announce(session: Int64, at: Double)
        /// Frames `range` of every track (30 fps, a keyframe every 60; frame f at f / 30 s on the
        /// stream's clock), the first anchoring the clock at `wall`.
        case frames(Range<Int>)
        /// The package's cards handed over; what ``StreamPackager/carry(_:key:)`` answered.
        case carry([DateRange], key: String = "shop/show")
    }

    struct Scenario: Sendable, CustomStringConvertible {
        let name: String
        let steps: [Step]
        let expected: [String]
        var description: String { name }
    }

    static let start = Step.announce(session: 1, at: wall)

    /// Parts are 10 frames (1/3 s, 30,000 ticks at 90 kHz); the segmenter holds one frame back,
    /// so after frames 0..<30 the parts of frames 0–9 and 10–19 are out and the next chunk starts
    /// at frame 20 (60,000).
    static let scenarios: [Scenario] = [
        Scenario(name: "a card already written goes once into the next chunk of every video rendition, moved to its start and shortened as much; audio carries none",
                 steps: [start, .frames(0..<30), .carry([card(7, at: wall + 0.5)]), .frames(30..<70), .carry([card(7, at: wall + 0.5)]), .frames(70..<130)],
                 expected: ["carried highlight-7", "360p emsg 7 at 60000 for 345000", "240p emsg 7 at 60000 for 345000", "carried none"]),
        Scenario(name: "an open card (END-ON-NEXT) only moves",
                 steps: [start, .frames(0..<30), .carry([card(8, at: wall + 0.25, duration: nil)]), .frames(30..<40)],
                 expected: ["carried highlight-8", "360p emsg 8 at 60000 for unknown", "240p emsg 8 at 60000 for unknown"]),
        Scenario(name: "a card not reached yet waits for the chunk it falls in, at its own time",
                 steps: [start, .frames(0..<30), .carry([card(6, at: wall + 1.5)]), .frames(30..<70)],
                 expected: ["carried highlight-6", "360p emsg 6 at 135000 for 360000", "240p emsg 6 at 135000 for 360000"]),
        Scenario(name: "a card over before the next chunk starts is not carried in band",
                 steps: [start, .frames(0..<30), .carry([card(5, at: wall + 0.1, duration: 0.2)]), .frames(30..<70)],
                 expected: ["carried highlight-5"]),
        Scenario(name: "before the stream's first frame nothing is anchored: the card waits for the next call",
                 steps: [start, .carry([card(9, at: wall)]), .frames(0..<10), .carry([card(9, at: wall)]), .frames(10..<30)],
                 expected: ["carried none", "carried highlight-9", "360p emsg 9 at 0 for 360000", "240p emsg 9 at 0 for 360000"]),
        Scenario(name: "a card that started before this packager took the show (a restarted packager's list) is passed over, for good",
                 steps: [start, .frames(1200..<1230), .carry([card(1, at: wall - 1)]), .frames(1230..<1270), .carry([card(1, at: wall - 1)]), .frames(1270..<1300)],
                 expected: ["carried none", "carried none"]),
        Scenario(name: "a new session passes over the cards of the show before it",
                 steps: [start, .frames(0..<30), .announce(session: 2, at: wall + 10), .frames(300..<310),
                         .carry([card(3, at: wall + 0.9), card(4, at: wall + 10.2)]), .frames(310..<340)],
                 expected: ["carried highlight-4", "360p emsg 4 at 918000 for 360000", "240p emsg 4 at 918000 for 360000"]),
        Scenario(name: "two cards in one call go into the same chunk, in order",
                 steps: [start, .frames(0..<30), .carry([card(2, at: wall + 0.7), card(3, at: wall + 0.75)]), .frames(30..<40)],
                 expected: ["carried highlight-2 highlight-3", "360p emsg 2 at 63000 for 360000", "360p emsg 3 at 67500 for 360000",
                            "240p emsg 2 at 63000 for 360000", "240p emsg 3 at 67500 for 360000"]),
        Scenario(name: "a stream this packager does not package carries nothing",
                 steps: [start, .frames(0..<30), .carry([card(5, at: wall)], key: "shop/other"), .frames(30..<70)],
                 expected: ["carried none"]),
    ]

    /// Every `emsg` of a part (``BoxTree``): id, presentation time, duration and message.
    static func events(_ bytes: [UInt8]) -> [(id: UInt32, time: UInt64, duration: UInt32, data: [UInt8])] {
        BoxTree.parse(bytes).filter { $0.type == "emsg" && $0.payload.first == 1 }.map { box in
            let p = box.payload  // version and flags, then timescale, time (64 bits), duration, id, strings, message
            var s = p.startIndex + 24
            for _ in 0..<2 { while p[s] != 0 { s += 1 }; s += 1 }  // scheme_id_uri, value
            return (BoxTree.u32(p, 20), UInt64(BoxTree.u32(p, 8)) << 32 | UInt64(BoxTree.u32(p, 12)), BoxTree.u32(p, 16), Array(p[s...]))
        }
    }

    @Test(arguments: scenarios)
    func carries(_ scenario: Scenario) {
        var packager = StreamPackager(configuration: .init(targetDuration: 2, partTarget: 1.0 / 3.0, chunkTarget: 0))
        var log: [String] = []
        for step in scenario.steps {
            switch step {
            case .announce(let session, let at):
                _ = packager.announce(StreamAnnounce(streamID: 1, sessionID: session, tenant: "shop", streamName: "show", discontinuity: session > 1, tracks: Self.tracks),
                                      listed: nil, resumption: nil, wallClock: Date(timeIntervalSince1970: at))
            case .frames(let range):
                for f in range {
                    for t in Self.tracks {
                        let scale = Int64(t.timescale) / 30
                        let u = AccessUnit(streamID: 1, trackID: t.trackID, flags: f % 60 == 0 ? 1 : 0, sequence: UInt64(f), dts: Int64(f) * scale, compositionOffset: 0, data: [UInt8(f & 0xFF)])
                        for case .publish(let output, let rendition, _) in packager.unit(u, wallClock: { StreamPackagerTests.wall }) ?? [] {
                            for part in output.parts {
                                for e in Self.events(part.bytes) {
                                    log.append("\(rendition) emsg \(e.id) at \(e.time) for \(e.duration == 0xFFFF_FFFF ? "unknown" : "\(e.duration)")")
                                }
                            }
                        }
                    }
                }
            case .carry(let cards, let key):
                let carried = packager.carry(cards, key: key)
                log.append("carried \(carried.isEmpty ? "none" : carried.joined(separator: " "))")
            }
        }
        #expect(log == scenario.expected)
    }

    /// The tag: one TXXX frame, described by the date range's CLASS, holding its attributes as JSON.
    @Test func theTagHoldsTheDateRangesAttributesAsJSON() throws {
        let tag = try #require(InBandCards.tag(Self.card(7, at: Self.wall + 0.5)))
        #expect(Array(tag.prefix(5)) == Array("ID3".utf8) + [4, 0])
        #expect(String(decoding: tag[10..<14], as: UTF8.self) == "TXXX")
        let content = Array(tag[20...])
        #expect(content.first == 3, "UTF-8")
        let description = try #require(content.dropFirst().split(separator: 0, maxSplits: 1, omittingEmptySubsequences: false).first)
        #expect(String(decoding: description, as: UTF8.self) == "com.storecast.highlight")
        let json = String(decoding: content.dropFirst(2 + description.count), as: UTF8.self)
        #expect(json == #"{"CLASS":"com.storecast.highlight","DURATION":4,"ID":"highlight-7","START-DATE":"2027-01-15T08:00:00.500Z","X-TITLE":"Red dress"}"#)
        #expect(InBandCards.eventID(Self.card(7, at: 0)) == 7)
        #expect(InBandCards.eventID(DateRange(id: "sale", classValue: "x", startDate: 0, duration: nil, attributes: [])) == InBandCards.eventID(DateRange(id: "sale", classValue: "y", startDate: 1, duration: nil, attributes: [])))
    }
}
