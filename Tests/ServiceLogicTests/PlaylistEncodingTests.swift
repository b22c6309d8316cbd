import CompressNIO
import NIOCore
@testable import Packager
import Testing

/// Which clients get a playlist in gzip (``AcceptEncoding.acceptsGzip(_:)``, RFC 9110 12.5.3),
/// and that the gzip is the playlist (``PlaylistEncoding/gzip(_:)``, undone by zlib).
@Suite struct PlaylistEncodingTests {
    static let acceptEncoding: [(field: String?, gzip: Bool)] = [
        (nil, false),                                  // no field: as it is (RFC 9110: any coding is acceptable, but identity is the safe one)
        ("", false),
        ("gzip", true),
        ("GZIP", true),
        ("gzip, deflate, br, zstd", true),             // Chromium's
        ("br;q=1.0, gzip;q=0.8, *;q=0.1", true),       // curl --compressed's shape
        ("x-gzip", true),
        ("identity", false),
        ("br", false),
        ("gzip;q=0", false),                           // refused
        ("gzip;q=0.000", false),
        ("gzip; q=0.001", true),
        ("gzip;Q=0.5", true),
        ("gzip;q=1.000", true),
        ("gzip;q=1.001", false),                       // not a weight: not an acceptance
        ("gzip;q=2", false),
        ("gzip;q=0.5000", false),                      // four decimals
        ("gzip;q=abc", false),
        ("*", true),
        ("*;q=0", false),
        ("*, gzip;q=0", false),                        // named refusal beats the wildcard
        ("gzip;q=0, *", false),
        ("br, *;q=0.5", true),
        (" \tgzip\t ", true),
        (",,gzip,,", true),
        ("deflate;level=9, gzip;foo=bar", true),      // other parameters are not weights
        ("gzip;q=0, gzip", false),                     // listed twice: the first counts
    ]

    @Test func whoGetsGzip() {
        for row in Self.acceptEncoding {
            #expect(AcceptEncoding.acceptsGzip(row.field) == row.gzip, "Accept-Encoding: \(row.field ?? "(none)")")
        }
    }

    static let weights: [(text: Substring, value: Double?)] = [
        ("0", 0), ("1", 1), ("0.", 0), ("1.", 1), ("0.5", 0.5), ("0.25", 0.25), ("0.125", 0.125), ("1.000", 1),
        ("1.5", nil), ("00", nil), ("0.1234", nil), (".5", nil), ("", nil), ("-0", nil), ("0,5", nil), ("+1", nil),
    ]

    @Test func weightsAsRFC9110WritesThem() {
        for row in Self.weights { #expect(AcceptEncoding.qValue(row.text) == row.value, "q=\(row.text)") }
    }

    @Test func theGzipIsThePlaylistAndSmaller() throws {
        var lines = ["#EXTM3U", "#EXT-X-VERSION:7", "#EXT-X-TARGETDURATION:2", "#EXT-X-PART-INF:PART-TARGET=0.200"]
        for msn in 40..<44 {
            for part in 0..<10 { lines.append("#EXT-X-PART:DURATION=0.20000,URI=\"part-\(msn).\(part).m4s\"" + (part == 0 ? ",INDEPENDENT=YES" : "")) }
            lines += ["#EXTINF:2.00000,", "seg-\(msn).m4s"]
        }
        let playlist = Array((lines.joined(separator: "\n") + "\n").utf8)
        let zipped = try #require(PlaylistEncoding.gzip(playlist))
        #expect(Array(zipped.prefix(2)) == [0x1F, 0x8B], "a gzip member")
        #expect(zipped.count * 4 < playlist.count, "\(zipped.count) of \(playlist.count) bytes")
        var buffer = ByteBuffer(bytes: zipped)
        let undone = try buffer.decompress(with: .gzip())
        #expect(Array(undone.readableBytesView) == playlist)
        // A rendering carries both, each under its own ETag.
        let rendered = PlaylistRenderCache.Rendered(String(decoding: playlist, as: UTF8.self))
        #expect(rendered.gzipped?.bytes == zipped && rendered.gzipped?.etag != rendered.etag)
        #expect(rendered.gzipped.map { $0.etag.hasPrefix(String(rendered.etag.dropLast())) && $0.etag.hasSuffix("-gzip\"") } == true, "\(rendered.gzipped?.etag ?? "")")
        #expect(rendered.size == playlist.count + zipped.count)
    }

    @Test func tinyBodiesGoAsTheyAre() {
        // gzip's own header and trailer are 18 bytes: a body this short only grows.
        #expect(PlaylistEncoding.gzip(Array("#EXTM3U\n".utf8)) == nil)
        #expect(PlaylistRenderCache.Rendered("#EXTM3U\n").gzipped == nil)
    }
}
