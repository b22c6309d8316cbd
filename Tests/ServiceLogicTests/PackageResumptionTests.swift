@testable import Packager
import StorecastRuntime
import Testing

/// How a restarted packager continues what it served, as a table over the cursors it wrote.
@Suite struct PackageResumptionTests {
    static func cursor(_ key: String, _ rendition: String, _ generation: String, _ last: Int, _ cc: Int, lastEnd: Double? = nil) -> PackageCursor {
        PackageCursor(streamKey: key, rendition: rendition, generation: generation, lastSequence: last, discontinuitySequence: cc, lastEnd: lastEnd)
    }

    /// When the restarted packager hears the stream again (seconds since 1970).
    static let wall = 1_800_000_000.0

    /// Segments of 1 s, unless a row says otherwise.
    static let cases: [(name: String, cursors: [PackageCursor], key: String, generation: String?, first: [String: Int?], cc: [String: Int?])] = [
        ("one stream: numbering goes on three past the last recorded segment",
         [cursor("t/s", "360p", "g1", 40, 0), cursor("t/s", "audio", "g1", 40, 0), cursor("t/s", "720p", "g1", 39, 2)],
         "t/s", "g1", ["360p": 43, "audio": 43, "720p": 42, "480p": nil], ["360p": 0, "720p": 2, "480p": nil]),
        ("two generations written moments apart: the newer numbering wins",
         [cursor("t/s", "360p", "old", 90, 1), cursor("t/s", "360p", "new", 5, 0), cursor("t/s", "audio", "new", 5, 0)],
         "t/s", "old", ["360p": 93, "audio": nil], ["360p": 1]),
        ("another stream's cursors are not this one's",
         [cursor("t/other", "360p", "g", 7, 0)],
         "t/s", nil, [:], [:]),
        // Room for the hole as gap segments of at most 1 s: 3 s gone by, 2 s for the next
        // keyframe, 2 s of margin. A cursor that does not know its end keeps the plain margin.
        ("where the last segment ended: room to list the hole",
         [cursor("t/s", "360p", "g", 40, 0, lastEnd: wall - 3), cursor("t/s", "audio", "g", 40, 0)],
         "t/s", "g", ["360p": 48, "audio": 43], ["360p": 0]),
        ("a segment that ended after the announce (clocks apart): the margin still holds",
         [cursor("t/s", "360p", "g", 40, 0, lastEnd: wall + 10)],
         "t/s", "g", ["360p": 45], ["360p": 0]),
        ("a hole longer than any player waits at: not listed, the plain margin",
         [cursor("t/s", "360p", "g", 40, 0, lastEnd: wall - 31)],
         "t/s", "g", ["360p": 43], ["360p": 0]),
    ]

    @Test(arguments: cases.indices)
    func resumption(_ i: Int) {
        let c = Self.cases[i]
        let r = PackageResumption.byStream(c.cursors)[c.key]
        #expect(r?.generation == c.generation, "\(c.name)")
        for (rendition, first) in c.first { #expect(r?.firstSequence(rendition, wallClock: Self.wall, targetDuration: 1) == first, "\(c.name): \(rendition)") }
        for (rendition, cc) in c.cc { #expect(r?.discontinuitySequence(rendition) == cc, "\(c.name): \(rendition)") }
    }
}

/// The hole a restart left, as gap segments under the numbers between the last one written down
/// and the first new one: a golden table.
@Suite struct ResumedGapTests {
    static let cases: [(name: String, after: Int, from: Double, first: Int, start: Double, sequences: [Int], durations: [Double], dates: [Double])] = [
        ("2.4 s lost over three numbers", 20, 100, 24, 102.4, [21, 22, 23], [0.8, 0.8, 0.8], [100, 100.8, 101.6]),
        ("one number free", 20, 100, 22, 100.5, [21], [0.5], [100]),
        ("no number free: nothing listed", 20, 100, 21, 103, [], [], []),
        ("nothing lost: nothing listed", 20, 100, 24, 100, [], [], []),
        ("the new segment begins before the old end (clocks apart): nothing listed", 20, 100, 24, 99, [], [], []),
        ("a hole longer than 30 s: nothing listed", 20, 100, 60, 130.5, [], [], []),
    ]

    @Test(arguments: cases.indices)
    func gap(_ i: Int) {
        let c = Self.cases[i]
        let segments = ResumedGap(afterSequence: c.after, from: c.from).segments(before: c.first, startingAt: c.start, initVersion: 3)
        #expect(segments.map(\.sequence) == c.sequences, "\(c.name)")
        #expect(zip(segments.map(\.duration), c.durations).allSatisfy { abs($0 - $1) < 1e-9 } && segments.count == c.durations.count, "\(c.name): \(segments.map(\.duration))")
        #expect(zip(segments.compactMap(\.programDateTime), c.dates).allSatisfy { abs($0 - $1) < 1e-9 } && segments.compactMap(\.programDateTime).count == c.dates.count, "\(c.name)")
        #expect(segments.allSatisfy { $0.gap && $0.bytes.isEmpty && !$0.discontinuity && $0.initVersion == 3 }, "\(c.name)")
    }
}
