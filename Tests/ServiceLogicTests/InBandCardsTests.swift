import Foundation
import HLS
@testable import Packager
import StorecastWire
import Testing

/// Product cards in band (issue 18) as a golden table: a show's frames and the cards the shell
/// hands the packager, with the wall clock as a parameter, and the `emsg` boxes each rendition's
/// parts then carry (rendition, event id, presentation time, duration, in the track's timescale).
@Suite struct InBandCardsTests {
    static let wall = StreamPackagerTests.wall.timeIntervalSince1970
    static let audio = TrackConfig(trackID: 3, kind: .audio, codec: "aac", name: "audio", timescale: 48_000, sampleRate: 48_000, channels: 2, config: [0x11, 0x90])
    static let tracks = StreamPackagerTests.ladder + [audio]

    static func card(_ n: Int, at start: Double, duration: Double? = 4) -> DateRange {
        DateRange(id: "highlight-\(n)", classValue: HighlightBook.dateRangeClass, startDate: start, duration: duration,
                  attributes: [DateRange.Attribute(name: "X-TITLE", value: "Red dress")])
    }

    enum Step: Sendable {
        /// Frames `range` of every track (30 fps, a keyframe every 60), the first anchoring the clock at `wall`.
        case frames(Range<Int>)
        /// The package's cards handed over at `now`; what ``StreamPackager/carry(_:key:now:)`` answered.
        case carry([DateRange], key: String = "shop/show", now: Double)
    }

    struct Scenario: Sendable, CustomStringConvertible {
        let name: String
        let steps: [Step]
        let expected: [String]
        var description: String { name }
    }

    static let scenarios: [Scenario] = [
        Scenario(name: "a card goes once into the next part of every video rendition, at its start on the track's timeline; audio carries none",
                 steps: [.frames(0..<30), .carry([card(7, at: wall + 0.5)], now: wall + 1), .frames(30..<70), .carry([card(7, at: wall + 0.5)], now: wall + 2), .frames(70..<130)],
                 expected: ["carried highlight-7", "360p emsg 7 at 45000 for 360000", "240p emsg 7 at 45000 for 360000", "carried none"]),
        Scenario(name: "an open card (END-ON-NEXT) has no known duration",
                 steps: [.frames(0..<30), .carry([card(8, at: wall + 0.25, duration: nil)], now: wall + 1), .frames(30..<40)],
                 expected: ["carried highlight-8", "360p emsg 8 at 22500 for unknown", "240p emsg 8 at 22500 for unknown"]),
        Scenario(name: "before the stream's first frame nothing is anchored: the card waits for the next call",
                 steps: [.carry([card(9, at: wall)], now: wall), .frames(0..<10), .carry([card(9, at: wall)], now: wall + 0.5), .frames(10..<30)],
                 expected: ["carried none", "carried highlight-9", "360p emsg 9 at 0 for 360000", "240p emsg 9 at 0 for 360000"]),
        Scenario(name: "a card older than the horizon (a restarted packager's list) is passed over, for good",
                 steps: [.frames(0..<30), .carry([card(1, at: wall - 31)], now: wall), .carry([card(1, at: wall - 31)], now: wall - 10), .frames(30..<70)],
                 expected: ["carried none", "carried none"]),
        Scenario(name: "two cards in one call go into the same chunk, in order; a later one into a later chunk",
                 steps: [.frames(0..<30), .carry([card(2, at: wall + 0.1), card(3, at: wall + 0.9)], now: wall + 1), .frames(30..<40),
                         .carry([card(2, at: wall + 0.1), card(3, at: wall + 0.9), card(4, at: wall + 1.2)], now: wall + 1.3), .frames(40..<50)],
                 expected: ["carried highlight-2 highlight-3", "360p emsg 2 at 9000 for 360000", "360p emsg 3 at 81000 for 360000",
                            "240p emsg 2 at 9000 for 360000", "240p emsg 3 at 81000 for 360000",
                            "carried highlight-4", "360p emsg 4 at 108000 for 360000", "240p emsg 4 at 108000 for 360000"]),
        Scenario(name: "a stream this packager does not package carries nothing",
                 steps: [.frames(0..<30), .carry([card(5, at: wall)], key: "shop/other", now: wall), .frames(30..<70)],
                 expected: ["carried none"]),
    ]

    /// Every `emsg` at the start of a chunk: id, presentation time, duration.
    static func events(_ bytes: [UInt8]) -> [(id: UInt32, time: UInt64, duration: UInt32, data: [UInt8])] {
        var found: [(UInt32, UInt64, UInt32, [UInt8])] = []
        var p = 0
        func u32(_ i: Int) -> UInt32 { UInt32(bytes[i]) << 24 | UInt32(bytes[i + 1]) << 16 | UInt32(bytes[i + 2]) << 8 | UInt32(bytes[i + 3]) }
        while p + 8 <= bytes.count {
            let size = Int(u32(p))
            guard size >= 8, p + size <= bytes.count else { break }
            if String(decoding: bytes[p + 4..<p + 8], as: UTF8.self) == "emsg", bytes[p + 8] == 1 {
                let body = p + 12  // after version and flags
                var s = body + 20
                for _ in 0..<2 { while bytes[s] != 0 { s += 1 }; s += 1 }  // scheme_id_uri, value
                found.append((u32(body + 16), UInt64(u32(body + 4)) << 32 | UInt64(u32(body + 8)), u32(body + 12), Array(bytes[s..<p + size])))
            }
            p += size
        }
        return found
    }

    @Test(arguments: scenarios)
    func carries(_ scenario: Scenario) {
        var packager = StreamPackager(configuration: .init(targetDuration: 2, partTarget: 1.0 / 3.0, chunkTarget: 0))
        _ = packager.announce(StreamAnnounce(streamID: 1, sessionID: 1, tenant: "shop", streamName: "show", discontinuity: false, tracks: Self.tracks),
                              listed: nil, resumption: nil, wallClock: StreamPackagerTests.wall)
        var log: [String] = []
        for step in scenario.steps {
            switch step {
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
            case .carry(let cards, let key, let now):
                let carried = packager.carry(cards, key: key, now: now)
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
