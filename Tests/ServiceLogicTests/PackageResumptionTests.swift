@testable import Packager
import StorecastRuntime
import Testing

/// How a restarted packager continues what it served, as a table over the cursors it wrote.
@Suite struct PackageResumptionTests {
    static func cursor(_ key: String, _ rendition: String, _ generation: String, _ last: Int, _ cc: Int) -> PackageCursor {
        PackageCursor(streamKey: key, rendition: rendition, generation: generation, lastSequence: last, discontinuitySequence: cc)
    }

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
    ]

    @Test(arguments: cases.indices)
    func resumption(_ i: Int) {
        let c = Self.cases[i]
        let r = PackageResumption.byStream(c.cursors)[c.key]
        #expect(r?.generation == c.generation, "\(c.name)")
        for (rendition, first) in c.first { #expect(r?.firstSequence(rendition) == first, "\(c.name): \(rendition)") }
        for (rendition, cc) in c.cc { #expect(r?.discontinuitySequence(rendition) == cc, "\(c.name): \(rendition)") }
    }
}
