@testable import Packager
import Testing

/// Which If-None-Match fields name a version (``PackagerHTTP/matches(ifNoneMatch:etag:)``): the
/// weak comparison of RFC 9110 13.1.2, a list, and `*`.
@Suite struct IfNoneMatchTests {
    static let etag = "\"00ab12cd34ef5678\""
    static let table: [(field: String?, matches: Bool)] = [
        (nil, false),
        ("", false),
        ("\"00ab12cd34ef5678\"", true),
        ("W/\"00ab12cd34ef5678\"", true),                   // a CDN that recompressed weakens it
        ("\"other\", \"00ab12cd34ef5678\"", true),
        ("\"other\",W/\"00ab12cd34ef5678\"", true),
        ("*", true),
        (" * ", true),
        ("\"00ab12cd34ef5678-gzip\"", false),              // the other representation
        ("\"00AB12CD34EF5678\"", false),                   // opaque tags compare byte for byte
        ("00ab12cd34ef5678", false),                       // not quoted: not this tag
        ("w/\"00ab12cd34ef5678\"", false),                 // the weak prefix is W/, case-sensitive
        ("\"other\"", false),
    ]

    @Test func weakComparisonOfAList() {
        for row in Self.table {
            #expect(PackagerHTTP.matches(ifNoneMatch: row.field, etag: Self.etag) == row.matches, "If-None-Match: \(row.field ?? "(none)")")
        }
        // A weak tag of ours is matched by its strong form too.
        #expect(PackagerHTTP.matches(ifNoneMatch: Self.etag, etag: "W/" + Self.etag))
    }
}
