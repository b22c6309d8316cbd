import Foundation
@testable import Packager
import StorecastTestSupport
import StorecastRuntime
import StorecastWire
import Testing

@Suite struct RenditionSegmenterTests {
    static let video = TrackConfig(trackID: 1, kind: .video, codec: "h264", name: "360p", timescale: 90_000, width: 640, height: 360, config: [])

    @Test func cutsOnKeyframesAndHoldsOneSampleBack() {
        var s = RenditionSegmenter(track: Self.video, targetDuration: 2)
        var segments: [PackagedSegment] = []
        for i in 0..<150 {  // 5 s at 30 fps, keyframe every 2 s
            let unit = AccessUnit(streamID: 1, trackID: 1, flags: i % 60 == 0 ? 1 : 0, sequence: UInt64(i), dts: Int64(i) * 3000, compositionOffset: 0, data: [UInt8(i & 0xFF)])
            if let seg = s.append(unit).segment { segments.append(seg) }
        }
        #expect(segments.map(\.sequence) == [0, 1])
        #expect(segments.map(\.duration) == [2.0, 2.0])
        #expect(segments.map(\.sampleCount) == [60, 60])
        let last = s.finish().segment
        #expect(last?.sampleCount == 30)
        #expect(last?.sequence == 2)
    }

    /// A new stream's first segment ends at the transcoder's fast-start keyframe (frame 18,
    /// 0.6 s) when the first segment may be that short; later segments keep the GOP, and a
    /// keyframe that soon in a later segment does not cut.
    @Test(arguments: [(minimum: 1.0 / 3, durations: [0.6, 1.4, 2.0, 2.0]), (minimum: nil, durations: [2.0, 2.0, 2.0])] as [(minimum: Double?, durations: [Double])])
    func theFirstSegmentMayEndAtTheFastStartKeyframe(_ c: (minimum: Double?, durations: [Double])) throws {
        var s = RenditionSegmenter(track: Self.video, targetDuration: 2, firstSequence: 1)
        s.startMinimum = c.minimum
        var segments: [PackagedSegment] = []
        for f in 0..<200 {
            let keyframe = f % 60 == 0 || f == 18 || f == 78  // 78: 0.6 s into the third GOP
            let unit = AccessUnit(streamID: 1, trackID: 1, flags: keyframe ? 1 : 0, sequence: UInt64(f), dts: Int64(f) * 3000, compositionOffset: 0, data: [UInt8(f & 0xFF)])
            if let seg = s.append(unit).segment { segments.append(seg) }
        }
        #expect(segments.map { ($0.duration * 100).rounded() / 100 } == c.durations)
        #expect(segments.map(\.sequence) == Array(1...c.durations.count))
    }

    @Test func videoBeforeTheFirstKeyframeIsDropped() {
        var s = RenditionSegmenter(track: Self.video, targetDuration: 2)
        #expect(s.append(AccessUnit(streamID: 1, trackID: 1, flags: 0, sequence: 1, dts: 0, compositionOffset: 0, data: [1])).isEmpty)
        #expect(s.finish().isEmpty)
    }

    @Test func discontinuityIsMarkedOnTheNextSegmentOnly() {
        var s = RenditionSegmenter(track: Self.video, targetDuration: 1)
        s.markDiscontinuity()
        var out: [PackagedSegment] = []
        for i in 0..<100 {
            if let seg = s.append(AccessUnit(streamID: 1, trackID: 1, flags: i % 30 == 0 ? 1 : 0, sequence: UInt64(i), dts: Int64(i) * 3000, compositionOffset: 0, data: [1])).segment { out.append(seg) }
        }
        #expect(out.map(\.discontinuity) == [true, false, false])
    }

    @Test func segmentsCarryTheWallClockOfTheirFirstSample() {
        var s = RenditionSegmenter(track: Self.video, targetDuration: 2)
        s.clockAnchor = ClockAnchor(wallSeconds: 1_000, streamSeconds: 10)  // stream time 10 s was packaged at t = 1000
        var out: [PackagedSegment] = []
        for i in 300..<450 {  // 10 s to 15 s of stream time
            if let seg = s.append(AccessUnit(streamID: 1, trackID: 1, flags: i % 60 == 0 ? 1 : 0, sequence: UInt64(i), dts: Int64(i) * 3000, compositionOffset: 0, data: [1])).segment { out.append(seg) }
        }
        #expect(out.map(\.programDateTime) == [1_000, 1_002])
        var package = try? StreamPackageTests.rendition("360p", kind: .video, segments: 0)
        package?.segments = out
        let text = package?.mediaPlaylist(targetDuration: 2, lowLatency: nil) ?? ""
        #expect(text.contains("#EXT-X-PROGRAM-DATE-TIME:1970-01-01T00:16:40.000Z\n#EXTINF:2.00000,\nseg-0.m4s"), "\(text)")
        #expect(text.contains("#EXT-X-PROGRAM-DATE-TIME:1970-01-01T00:16:42.000Z"))
    }

    @Test func audioCutsByDuration() {
        let audio = TrackConfig(trackID: 2, kind: .audio, codec: "aac", name: "audio", timescale: 48_000, sampleRate: 48_000, channels: 2, config: [0x11, 0x90])
        var s = RenditionSegmenter(track: audio, targetDuration: 2)
        var out: [PackagedSegment] = []
        for i in 0..<300 {
            if let seg = s.append(AccessUnit(streamID: 1, trackID: 2, flags: 1, sequence: UInt64(i), dts: Int64(i) * 1024, compositionOffset: 0, data: [1])).segment { out.append(seg) }
        }
        #expect(out.count == 3)
        #expect(out.allSatisfy { abs($0.duration - 2.0) < 0.03 })
    }
}

/// A stream moves from worker A to worker B, which starts from ingest's GOP cache and so repeats
/// timestamps. 30 fps at 90 kHz, keyframes every 60 frames on both workers (the cadence is a
/// function of stream time), and B's first frame is always a keyframe.
@Suite struct RenditionSegmenterSpliceTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var target: Double
        var workerA: Range<Int>
        var workerB: Range<Int>
        /// Expected segments as (first frame, frame count).
        var segments: [(Int, Int)]
        var dropped: Int
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "B replays from the open segment's keyframe", target: 2, workerA: 0..<100, workerB: 60..<200,
             segments: [(0, 60), (60, 60), (120, 60), (180, 20)], dropped: 40),
        Case(name: "B's keyframe falls inside the open segment", target: 6, workerA: 0..<191, workerB: 180..<400,
             segments: [(0, 120), (120, 60), (180, 120), (300, 100)], dropped: 11),
        Case(name: "B replays from before the last published cut", target: 2, workerA: 0..<130, workerB: 60..<200,
             segments: [(0, 60), (60, 60), (120, 60), (180, 20)], dropped: 70),
        Case(name: "A fell behind: B starts after A's last frame", target: 2, workerA: 0..<100, workerB: 120..<200,
             segments: [(0, 60), (60, 40), (120, 60), (180, 20)], dropped: 0),
    ]

    static let frame: Int64 = 3000

    static func unit(_ f: Int, keyframe: Bool) -> AccessUnit {
        AccessUnit(streamID: 1, trackID: 1, flags: keyframe ? 1 : 0, sequence: UInt64(f), dts: Int64(f) * frame, compositionOffset: 0, data: [UInt8(f & 0xFF)])
    }

    @Test(arguments: cases)
    func splicesWithoutADiscontinuity(_ c: Case) {
        var s = RenditionSegmenter(track: RenditionSegmenterTests.video, targetDuration: c.target, partTarget: 100)  // whole-segment parts
        var out: [PackagedSegment] = []
        for f in c.workerA { if let seg = s.append(Self.unit(f, keyframe: f % 60 == 0)).segment { out.append(seg) } }
        for f in c.workerB { if let seg = s.append(Self.unit(f, keyframe: f == c.workerB.lowerBound || f % 60 == 0)).segment { out.append(seg) } }
        if let last = s.finish().segment { out.append(last) }
        #expect(out.map { Int($0.startTime / Self.frame) } == c.segments.map(\.0))
        #expect(out.map(\.sampleCount) == c.segments.map(\.1))
        #expect(out.map(\.sequence) == Array(0..<out.count))
        #expect(out.allSatisfy { !$0.discontinuity })
        for (a, b) in zip(out, out.dropFirst()) { #expect(a.startTime + a.ticks == b.startTime, "timeline continues") }
        #expect(s.splices == (c.workerB.lowerBound < c.workerA.upperBound ? 1 : 0))
        #expect(s.replayedUnitsDropped == c.dropped)
    }

    @Test func audioSkipsWhatItAlreadyHas() {
        let audio = TrackConfig(trackID: 2, kind: .audio, codec: "aac", name: "audio", timescale: 48_000, sampleRate: 48_000, channels: 2, config: [0x11, 0x90])
        var s = RenditionSegmenter(track: audio, targetDuration: 2)
        var out: [PackagedSegment] = []
        let au = { (i: Int) in AccessUnit(streamID: 1, trackID: 2, flags: 1, sequence: UInt64(i), dts: Int64(i) * 1024, compositionOffset: 0, data: [UInt8(i & 0xFF)]) }
        for i in 0..<100 { if let seg = s.append(au(i)).segment { out.append(seg) } }
        for i in 60..<300 { if let seg = s.append(au(i)).segment { out.append(seg) } }
        if let last = s.finish().segment { out.append(last) }
        #expect(out.reduce(0) { $0 + $1.sampleCount } == 300)
        #expect(s.replayedUnitsDropped == 40)
        #expect(s.splices == 1, "one splice, not one per replayed unit")
        for (a, b) in zip(out, out.dropFirst()) { #expect(a.startTime + a.ticks == b.startTime) }
    }
}

@Suite struct StreamPackageTests {
    static func rendition(_ name: String, kind: TrackKind, segments: Int) throws -> RenditionPackage {
        let config: [UInt8] = kind == .video
            ? [0x01, 0x42, 0xC0, 0x0D, 0xFF, 0xE1, 0x00, 0x18] + ParameterSetFixtures.baselineSPS320x240 + [0x01, 0x00, 0x05, 0x68, 0xCB, 0x83, 0xCB, 0x20]
            : [0x12, 0x08]
        var r = try RenditionPackage(track: TrackConfig(trackID: kind == .video ? 1 : 2, kind: kind, codec: kind == .video ? "h264" : "aac", name: name, timescale: kind == .video ? 90_000 : 44_100, width: 320, height: 240, bitrate: 400_000, sampleRate: 44_100, channels: 1, config: config))
        r.segments = (0..<segments).map { PackagedSegment(sequence: $0, duration: 2, bytes: [0, 0, 0, 8, 0x6D, 0x64, 0x61, 0x74], discontinuity: false, sampleCount: 60) }
        return r
    }

    @Test func aRetiredRenditionLeavesTheMultivariantPlaylist() throws {
        var low = try Self.rendition("180p", kind: .video, segments: 2)
        low.track.height = 180
        var p = StreamPackage(streamID: 1, tenant: "t", name: "s", renditions: [
            "240p": try Self.rendition("240p", kind: .video, segments: 2), "180p": low,
            "audio": try Self.rendition("audio", kind: .audio, segments: 2),
        ])
        #expect(p.multivariantPlaylist().contains("240p/index.m3u8") && p.multivariantPlaylist().contains("180p/index.m3u8"))
        p.renditions["240p"]?.retired = true  // shed under load
        #expect(!p.multivariantPlaylist().contains("240p/index.m3u8"))
        #expect(p.multivariantPlaylist().contains("180p/index.m3u8"))
    }

    /// The passed-through source follows the publisher's keyframes: the ladder and audio are
    /// waited for, the source joins the multivariant playlist once it has a segment.
    @Test func theSourceRenditionIsNotWaitedFor() throws {
        var p = StreamPackage(streamID: 1, tenant: "t", name: "s", renditions: [
            "360p": try Self.rendition("360p", kind: .video, segments: 1),
            "source": try Self.rendition("source", kind: .video, segments: 0),
            "audio": try Self.rendition("audio", kind: .audio, segments: 1),
        ])
        #expect(p.isReady)
        #expect(!p.multivariantPlaylist().contains("source/index.m3u8"))
        p.renditions["source"] = try Self.rendition("source", kind: .video, segments: 1)
        #expect(p.multivariantPlaylist().contains("source/index.m3u8"))
        // A stream with only the source as video waits for it.
        p.renditions["360p"] = nil
        p.renditions["source"] = try Self.rendition("source", kind: .video, segments: 0)
        #expect(!p.isReady)
    }

    @Test func readyOnlyWhenEveryRenditionHasASegment() throws {
        var p = StreamPackage(streamID: 1, tenant: "t", name: "s", renditions: [
            "360p": try Self.rendition("360p", kind: .video, segments: 1),
            "audio": try Self.rendition("audio", kind: .audio, segments: 0),
        ])
        #expect(!p.isReady)
        p.renditions["audio"] = try Self.rendition("audio", kind: .audio, segments: 1)
        #expect(p.isReady)
        let master = p.multivariantPlaylist()
        #expect(master.contains("CODECS=\"avc1.42C00D,mp4a.40.2\""))
        #expect(master.contains("RESOLUTION=320x240"))
        #expect(master.contains("URI=\"audio/index.m3u8\""))
    }

    /// BANDWIDTH, AVERAGE-BANDWIDTH and FRAME-RATE measured from the window's segments (golden
    /// arithmetic): video 500,000 / 250,000 / 100,000 bytes over 2 / 2 / 1 s with 60 / 60 / 30
    /// frames; audio 24,000 bytes a 2 s segment. Peak 2 Mbps beats the announced 400 kbps × 1.1.
    @Test func bandwidthAndFrameRateAreMeasured() throws {
        var video = try Self.rendition("360p", kind: .video, segments: 0)
        video.segments = [(2.0, 500_000, 60), (2.0, 250_000, 60), (1.0, 100_000, 30)].enumerated().map { i, s in
            PackagedSegment(sequence: i, duration: s.0, bytes: [UInt8](repeating: 0, count: s.1), discontinuity: false, sampleCount: s.2)
        }
        #expect(video.averageBitrate == 1_360_000 && video.peakBitrate == 2_000_000 && video.measuredFrameRate == 30)
        var audio = try Self.rendition("audio", kind: .audio, segments: 0)
        audio.segments = (0..<3).map { PackagedSegment(sequence: $0, duration: 2, bytes: [UInt8](repeating: 0, count: 24_000), discontinuity: false, sampleCount: 94) }
        #expect(audio.averageBitrate == 96_000 && audio.measuredFrameRate == nil)
        let master = StreamPackage(streamID: 1, tenant: "t", name: "s", renditions: ["360p": video, "audio": audio]).multivariantPlaylist()
        // BANDWIDTH: peak + the audio track's announced 400,000 (the fixture's bitrate); AVERAGE: both measured.
        #expect(master.contains("BANDWIDTH=2400000,AVERAGE-BANDWIDTH=1456000,RESOLUTION=320x240,FRAME-RATE=30.000,"), "\(master)")
        video.segments = [PackagedSegment(sequence: 0, duration: 2, bytes: [UInt8](repeating: 0, count: 25_000), discontinuity: false, sampleCount: 50)]
        let quiet = StreamPackage(streamID: 1, tenant: "t", name: "s", renditions: ["360p": video, "audio": audio]).multivariantPlaylist()
        #expect(quiet.contains("BANDWIDTH=840000,AVERAGE-BANDWIDTH=196000,RESOLUTION=320x240,FRAME-RATE=25.000,"), "a quiet window keeps the announced peak (440,000 + 400,000): \(quiet)")
    }

    @Test func targetDurationIsTheRoundedLongestSegment() throws {
        var r = try Self.rendition("360p", kind: .video, segments: 0)
        r.segments = [PackagedSegment(sequence: 4, duration: 2.4, bytes: [], discontinuity: false, sampleCount: 1),
                      PackagedSegment(sequence: 5, duration: 3.6, bytes: [], discontinuity: true, sampleCount: 1)]
        let text = r.mediaPlaylist(targetDuration: 2, lowLatency: nil)
        #expect(text.contains("#EXT-X-TARGETDURATION:4"))
        #expect(text.contains("#EXT-X-MEDIA-SEQUENCE:4"))
        #expect(text.contains("#EXT-X-DISCONTINUITY\n#EXTINF:3.60000,\nseg-5.m4s"))
    }
}

/// The player page's script as the browser gets it: the Swift string literal must not turn the
/// regular expressions' escapes into raw characters (a raw newline in a JavaScript regex literal
/// is a syntax error, and the whole page then does nothing).
@Suite struct PlayerPageTests {
    @Test func scriptEscapesSurviveTheSwiftLiteral() {
        let page = PlayerPage.html(title: "t/s", playlistURL: "/live/t/s/master.m3u8", hlsJSURL: nil)
        #expect(page.contains(#"master.split(/\r?\n/)"#))
        #expect(page.contains(#"/Chrome\//.test(navigator.userAgent)"#))
        let script = page[page.range(of: "<script>")!.upperBound..<page.range(of: "</script>", options: .backwards)!.lowerBound]
        let regexLines = script.split(separator: "\n").filter { $0.contains(".split(/") || $0.contains("matchAll(/") }
        #expect(page.contains(#"playlist.split(/#EXT-X-DISCONTINUITY\r?\n/)"#))
        #expect(page.contains(#"if (/^https?:\/\//i.test(c['X-LINK'] || ''))"#), "the card's link check reaches the browser as a regex")
        #expect(regexLines.count == 3 && regexLines.allSatisfy { $0.contains(")") }, "regex literals stay on one line: \(regexLines)")
    }

    /// The page's default (auto): hls.js wherever MSE exists and the browser is not Safari; the
    /// operator's or the page's choice overrides it.
    @Test(arguments: [(PlayerPreference.auto, "auto"), (.native, "native"), (.hlsJS, "hls.js")])
    func thePlayerChoiceReachesTheScript(prefer: PlayerPreference, written: String) {
        let page = PlayerPage.html(title: "t/s", playlistURL: "/live/t/s/master.m3u8", hlsJSURL: "/assets/hls.js", prefer: prefer)
        #expect(page.contains("get('player') || \"\(written)\";"))
        #expect(page.contains("const wantHlsJS = prefer === 'hls.js' || (prefer === 'auto' && !safari);"))
        #expect(PlayerPage.html(title: "t", playlistURL: "/x", hlsJSURL: nil).contains("get('player') || \"auto\";"), "auto by default")
    }

    /// The feed page reads the tenant's feed from the API's URL, as a script string.
    @Test func theFeedPageReadsTheAPIsFeed() {
        let page = FeedPage.html(tenant: "shop", feedURL: "https://api.example.com/v1/feed/shop", hlsJSURL: "/assets/hls.js")
        #expect(page.contains(#"const feedURL = "https://api.example.com/v1/feed/shop";"#))
        #expect(page.contains(#"<script src="/assets/hls.js"></script>"#) && page.components(separatedBy: "</script>").count == 3)
    }

    /// The stream's events URL goes into the script as a JavaScript string (null without one),
    /// and cannot close the script element.
    @Test(arguments: [
        (nil, "const eventsURL = null;"),
        ("https://api.example.com/v1/tenants/t/streams/s/events?token=1.a", #"const eventsURL = "https://api.example.com/v1/tenants/t/streams/s/events?token=1.a";"#),
        (#"x"</script><script>alert(1)//"#, #"const eventsURL = "x\"\u003c/script>\u003cscript>alert(1)//";"#),
    ] as [(String?, String)])
    func eventsURLIsAScriptString(url: String?, line: String) {
        let page = PlayerPage.html(title: "t/s", playlistURL: "/live/t/s/master.m3u8", hlsJSURL: nil, eventsURL: url)
        #expect(page.contains(line), "\(page.split(separator: "\n").first { $0.contains("const eventsURL") } ?? "no eventsURL line")")
        #expect(page.components(separatedBy: "</script>").count == 2)
    }
}

/// Product cards as the packager keeps them (``HighlightBook``) and lists them: a golden table
/// of cards read from the database, then which of them a rendition's playlist lists.
@Suite struct HighlightBookTests {
    static func card(_ id: Int64, stream: String = "show", session: Int64 = 1, at start: Double, duration: Double? = nil, title: String = "Card") -> HighlightStore.Highlight {
        // As the API answers it (the type's initializer is the store's own).
        let json = #"{"id":\#(id),"tenant":"shop","stream":"\#(stream)","session":\#(session),"productId":"sku-\#(id)","title":"\#(title)","startDate":"","startSeconds":\#(start)"#
            + (duration.map { #","durationSeconds":\#($0)}"# } ?? "}")
        return try! JSONDecoder().decode(HighlightStore.Highlight.self, from: Data(json.utf8))
    }

    static let reads: [(name: String, cards: [HighlightStore.Highlight], changed: Set<String>, ids: [String: [String]])] = [
        ("two streams", [card(1, at: 100), card(2, stream: "other", at: 101)], ["shop/show", "shop/other"],
         ["shop/show": ["highlight-1"], "shop/other": ["highlight-2"]]),
        ("a repeat read changes nothing", [card(1, at: 100)], [], ["shop/show": ["highlight-1"], "shop/other": ["highlight-2"]]),
        ("an earlier card read later is put in order", [card(4, at: 103), card(3, at: 99)], ["shop/show"],
         ["shop/show": ["highlight-3", "highlight-1", "highlight-4"], "shop/other": ["highlight-2"]]),
    ]

    @Test func keepsEachStreamsCardsInOrderOnce() {
        var book = HighlightBook()
        for read in Self.reads {
            #expect(book.add(read.cards) == read.changed, "\(read.name)")
            #expect(book.byKey.mapValues { $0.map(\.range.id) } == read.ids, "\(read.name)")
        }
        #expect(book.lastID == 4)
        let first = book.byKey["shop/show"]?.last?.range
        #expect(first?.classValue == HighlightBook.dateRangeClass && first?.attributes.first == .init(name: "X-PRODUCT-ID", value: "sku-4"))
    }

    @Test func keepsAHundredPerStreamAndLetsOldOnesGoButTheLatest() {
        var book = HighlightBook()
        book.add((1...130).map { Self.card(Int64($0), at: Double($0)) } + [Self.card(200, stream: "quiet", at: 5)])
        #expect(book.byKey["shop/show"]?.count == HighlightBook.perStream && book.byKey["shop/show"]?.first?.range.id == "highlight-31")
        book.prune(now: 130 + HighlightBook.horizon - 0.5, live: ["shop/show"])  // cards up to 129.5 s go
        #expect(book.byKey["shop/show"]?.map(\.range.id) == ["highlight-130"], "the latest stays while the show is live: it may still show")
        #expect(book.byKey["shop/quiet"] == nil, "a stream not live here keeps no old card")
        book.prune(now: 131 + HighlightBook.horizon, live: [])
        #expect(book.byKey.isEmpty, "the show ended: its last card goes too once old")
    }

    /// A card of an earlier show on the same stream never reaches the next show's playlists.
    @Test func eachShowGetsOnlyItsOwnCards() {
        var book = HighlightBook()
        book.add([Self.card(1, session: 7, at: 100), Self.card(2, session: 7, at: 110), Self.card(3, session: 8, at: 500)])
        #expect(book.ranges("shop/show", session: 7).map(\.id) == ["highlight-1", "highlight-2"])
        #expect(book.ranges("shop/show", session: 8).map(\.id) == ["highlight-3"])
        #expect(book.ranges("shop/show", session: 9).isEmpty && book.ranges("shop/other", session: 7).isEmpty)
    }

    /// A rendition lists the cards that have not ended before its first listed segment.
    @Test func aPlaylistListsTheCardsOfItsWindow() throws {
        var r = try StreamPackageTests.rendition("360p", kind: .video, segments: 3)
        for i in r.segments.indices { r.segments[i].programDateTime = 1000 + Double(i) * 2 }
        let ranges = [HighlightBook.dateRange(Self.card(1, at: 990, duration: 5)),   // ended at 995
                      HighlightBook.dateRange(Self.card(2, at: 996, duration: 10)),  // until 1006
                      HighlightBook.dateRange(Self.card(3, at: 997)),                // until card 4
                      HighlightBook.dateRange(Self.card(4, at: 999.5)),              // open
                      HighlightBook.dateRange(Self.card(5, at: 1003, duration: 1))]
        let text = r.mediaPlaylist(targetDuration: 2, lowLatency: nil, dateRanges: ranges)
        let listed = text.matches(of: /ID="(highlight-\d+)"/).map { String($0.1) }
        #expect(listed == ["highlight-2", "highlight-4", "highlight-5"], "\(text)")
    }
}
