import StorecastRuntime
import Testing

/// The one path builder: every DVR and recording path goes through it (fuzzed by fuzz/run.sh's
/// `path` target as well).
@Suite struct ContainedPathTests {
    static let root = "/srv/storecast/dvr"

    static let accepted: [([String], String)] = [
        (["acme", "show", "720p", "seg12.m4s"], "/srv/storecast/dvr/acme/show/720p/seg12.m4s"),
        (["acme", "show", "17"], "/srv/storecast/dvr/acme/show/17"),
        (["index.m3u8"], "/srv/storecast/dvr/index.m3u8"),
        ([], "/srv/storecast/dvr"),
    ]

    @Test(arguments: accepted) func joins(_ names: [String], _ expected: String) throws {
        #expect(try ContainedPath.join(Self.root, names) == expected)
        #expect(try ContainedPath.join(Self.root + "/", names) == expected)
    }

    static let refused: [[String]] = [
        ["..", "..", "tmp"], ["acme", ".."], ["."], [""], ["acme/../../etc"], ["/etc"], [".ssh"], ["a\u{0}b"],
        [String(repeating: "a", count: 129)], ["acme", "show", "x y"],
    ]

    @Test(arguments: refused) func refuses(_ names: [String]) {
        #expect(throws: ContainedPath.Refused.self) { try ContainedPath.join(Self.root, names) }
    }

    @Test func streamKeys() throws {
        #expect(try ContainedPath.join(Self.root, streamKey: "acme/show", ["720p"]) == "/srv/storecast/dvr/acme/show/720p")
        for key in ["../../../../tmp/show", "acme", "acme/show/extra", "/acme", "acme/", "../x"] {
            #expect(throws: ContainedPath.Refused.self, "\(key)") { try ContainedPath.join(Self.root, streamKey: key) }
        }
    }
}
