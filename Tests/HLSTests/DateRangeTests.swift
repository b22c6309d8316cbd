import HLS
import StorecastTestSupport
import Testing

/// EXT-X-DATERANGE (RFC 8216bis 4.4.5.1) as the origin writes product cards: golden lines, the
/// tags in media playlists (full and delta), and random values that never break the line.
@Suite struct DateRangeTests {
    static let start = 1_795_000_000.25  // 2026-11-18T11:06:40.250Z
    static let golden: [(name: String, range: DateRange, line: String)] = [
        ("a card for 20 s", DateRange(id: "highlight-7", classValue: "com.storecast.highlight", startDate: start, duration: 20, attributes: [
            .init(name: "X-PRODUCT-ID", value: "sku-1"), .init(name: "X-TITLE", value: "Red dress"), .init(name: "X-PRICE", value: "49.90"), .init(name: "X-CURRENCY", value: "EUR"),
        ]), #"#EXT-X-DATERANGE:ID="highlight-7",CLASS="com.storecast.highlight",START-DATE="2026-11-18T11:06:40.250Z",DURATION=20.000,X-PRODUCT-ID="sku-1",X-TITLE="Red dress",X-PRICE="49.90",X-CURRENCY="EUR""#),
        ("until the next card", DateRange(id: "highlight-8", classValue: "com.storecast.highlight", startDate: start + 0.5, duration: nil, attributes: [.init(name: "X-TITLE", value: "Hat")]),
         #"#EXT-X-DATERANGE:ID="highlight-8",CLASS="com.storecast.highlight",START-DATE="2026-11-18T11:06:40.750Z",END-ON-NEXT=YES,X-TITLE="Hat""#),
        ("quotes and line breaks left out, a bad attribute name dropped", DateRange(id: "x\"y", classValue: "c", startDate: start, duration: 1.5, attributes: [
            .init(name: "X-TITLE", value: "Say \"hi\"\r\nnow"), .init(name: "X-lower", value: "no"), .init(name: "TITLE", value: "no"), .init(name: "X-", value: "no"),
        ]), #"#EXT-X-DATERANGE:ID="xy",CLASS="c",START-DATE="2026-11-18T11:06:40.250Z",DURATION=1.500,X-TITLE="Say hinow""#),
    ]

    @Test(arguments: golden.indices)
    func rendersTheGoldenLine(_ i: Int) {
        #expect(Self.golden[i].range.render() == Self.golden[i].line, "\(Self.golden[i].name)")
    }

    @Test func endsWhereItsDurationOrTheNextOfItsClassSays() {
        let a = DateRange(id: "a", classValue: "c", startDate: 10, duration: nil, attributes: [])
        let b = DateRange(id: "b", classValue: "c", startDate: 15, duration: 2, attributes: [])
        let other = DateRange(id: "o", classValue: "d", startDate: 12, duration: nil, attributes: [])
        let all = [a, b, other]
        #expect(a.endDate(among: all) == 15 && b.endDate(among: all) == 17 && other.endDate(among: all) == nil)
    }

    /// In a media playlist, before the first listed segment, in a delta update too; not at all
    /// without a program date-time (the tag needs one).
    @Test func mediaPlaylistsCarryThemInFullAndDeltaUpdates() {
        let segments = (0..<4).map { PlaylistSegment(sequence: $0, duration: 2, uri: "seg-\($0).m4s", programDateTime: ProgramDateTime.format(Self.start + Double($0) * 2)) }
        var playlist = MediaPlaylist(targetDuration: 2, mapURI: "init.mp4", segments: segments)
        playlist.dateRanges = [Self.golden[1].range]
        let full = playlist.render().split(separator: "\n").map(String.init)
        #expect(full.firstIndex(of: Self.golden[1].line) == full.firstIndex { $0.hasPrefix("#EXT-X-PROGRAM-DATE-TIME") }.map { $0 - 1 }, "\(full)")
        playlist.skippedSegments = 3
        let delta = playlist.render()
        #expect(delta.contains("#EXT-X-SKIP:SKIPPED-SEGMENTS=3\n" + Self.golden[1].line + "\n"), "\(delta)")
        playlist.segments = segments.map { var s = $0; s.programDateTime = nil; return s }
        #expect(!playlist.render().contains("EXT-X-DATERANGE"))
    }

    /// Whatever reaches the renderer (titles from a tenant's back end), the tag stays one line
    /// of balanced quoted strings with client attribute names only.
    @Test func randomValuesNeverBreakTheLine() {
        var random = SeededGenerator(seed: 18)
        let alphabet: [Character] = ["a", "Z", "0", " ", "\"", "\r", "\n", ",", "=", "é", "🛍", "\u{2028}", "\\", "-", "X"]
        func text() -> String { String((0..<Int.random(in: 0...24, using: &random)).map { _ in alphabet.randomElement(using: &random)! }) }
        for _ in 0..<2000 {
            let range = DateRange(id: text(), classValue: text(), startDate: Double.random(in: 0...4_000_000_000, using: &random),
                                  duration: Bool.random(using: &random) ? Double.random(in: -5...3600, using: &random) : nil,
                                  attributes: (0..<3).map { _ in .init(name: Bool.random(using: &random) ? "X-" + text().uppercased() : text(), value: text()) })
            let line = range.render()
            #expect(line.hasPrefix("#EXT-X-DATERANGE:ID=\"") && !line.contains("\n") && !line.contains("\r"), "\(line)")
            #expect(line.filter { $0 == "\"" }.count % 2 == 0, "\(line)")
            #expect(!line.contains("DURATION=-"), "\(line)")
        }
    }
}
