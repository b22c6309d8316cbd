@testable import Packager
import Testing

/// What the origin's hot path takes for itself: media under a generation's directory, in plain
/// characters, without a query. Everything else is the router's. A golden table.
@Suite struct MediaPathTests {
    static let cases: [(path: String, parsed: [String]?)] = [
        ("/live/shop/launch/mwy5yauf/360p/part-12.3.m4s", ["shop", "launch", "mwy5yauf", "360p", "part-12.3.m4s"]),
        ("/live/shop/launch/mwy5yauf/audio/init-2.mp4", ["shop", "launch", "mwy5yauf", "audio", "init-2.mp4"]),
        ("/live/shop/launch/mwy5yauf/360p/part-12.3.m4s?token=abc", nil),  // a token: private, the router's
        ("/live/shop/launch/mwy5yauf/360p/index.m3u8x", ["shop", "launch", "mwy5yauf", "360p", "index.m3u8x"]),  // parsed; no such media, handed on later
        ("/live/shop/launch/360p/part-12.3.m4s", nil),  // directly under the stream (no generation): revalidated, the router's
        ("/live/shop/launch/mwy5yauf/360p/", nil),
        ("/live/shop/../mwy5yauf/360p/seg-1.m4s", nil),
        ("/live/shop/launch/mwy5yauf/360p/seg%2D1.m4s", nil),  // an escape: the router's (it does not decode path parameters; its answer is 400)
        ("/live//launch/mwy5yauf/360p/seg-1.m4s", nil),
        ("/play/shop/launch/mwy5yauf/360p/seg-1.m4s", nil),
        ("/live/shop/launch/mwy5yauf/360p/seg-1.m4s/x", nil),
    ]

    @Test(arguments: cases.indices)
    func parse(_ i: Int) {
        let c = Self.cases[i]
        let p = MediaPath(c.path)
        #expect(p.map { [$0.tenant, $0.stream, $0.generation, $0.rendition, $0.file] } == c.parsed, "\(c.path)")
    }
}

/// The Date field as HTTP writes it (RFC 9110 5.6.7): golden values, checked against Python's
/// strftime.
@Suite struct HTTPDateTests {
    @Test(arguments: [(0, "Thu, 01 Jan 1970 00:00:00 GMT"), (1_709_251_199, "Thu, 29 Feb 2024 23:59:59 GMT"), (1_800_000_000, "Fri, 15 Jan 2027 08:00:00 GMT")])
    func format(_ seconds: Int, _ text: String) {
        #expect(HTTPDate.format(seconds) == text)
    }
}
