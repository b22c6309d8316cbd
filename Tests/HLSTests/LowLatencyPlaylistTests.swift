import HLS
import Testing

@Suite struct LowLatencyPlaylistTests {
    static let parts = [
        PlaylistPart(duration: 0.33333, uri: "part-41.0.m4s", independent: true),
        PlaylistPart(duration: 0.33333, uri: "part-41.1.m4s", independent: false),
    ]

    static func playlist(skipped: Int = 0) -> MediaPlaylist {
        MediaPlaylist(
            targetDuration: 2, mapURI: "init.mp4",
            segments: [
                PlaylistSegment(sequence: 40, duration: 2, uri: "seg-40.m4s", programDateTime: "2026-11-23T10:00:00.000Z"),
                PlaylistSegment(sequence: 41, duration: 0.66666, uri: "seg-41.m4s", programDateTime: "2026-11-23T10:00:02.000Z", parts: parts),
            ],
            partTarget: 1.0 / 3.0,
            serverControl: ServerControl(canBlockReload: true, canSkipUntil: 12, partHoldBack: 3 * MediaPlaylist.writtenPartTarget(1.0 / 3.0)),
            trailingParts: [PlaylistPart(duration: 0.33333, uri: "part-42.0.m4s", independent: true)],
            preloadHintURI: "part-42.1.m4s",
            renditionReports: [RenditionReport(uri: "../240p/index.m3u8", lastSequence: 42, lastPart: 0)],
            skippedSegments: skipped)
    }

    @Test func lowLatencyGolden() {
        #expect(Self.playlist().render() == """
        #EXTM3U
        #EXT-X-VERSION:7
        #EXT-X-TARGETDURATION:2
        #EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,CAN-SKIP-UNTIL=12.000,PART-HOLD-BACK=1.002
        #EXT-X-PART-INF:PART-TARGET=0.334
        #EXT-X-MEDIA-SEQUENCE:40
        #EXT-X-MAP:URI="init.mp4"
        #EXT-X-PROGRAM-DATE-TIME:2026-11-23T10:00:00.000Z
        #EXTINF:2.00000,
        seg-40.m4s
        #EXT-X-PROGRAM-DATE-TIME:2026-11-23T10:00:02.000Z
        #EXT-X-PART:DURATION=0.33333,URI="part-41.0.m4s",INDEPENDENT=YES
        #EXT-X-PART:DURATION=0.33333,URI="part-41.1.m4s"
        #EXTINF:0.66666,
        seg-41.m4s
        #EXT-X-PART:DURATION=0.33333,URI="part-42.0.m4s",INDEPENDENT=YES
        #EXT-X-PRELOAD-HINT:TYPE=PART,URI="part-42.1.m4s"
        #EXT-X-RENDITION-REPORT:URI="../240p/index.m3u8",LAST-MSN=42,LAST-PART=0

        """)
    }

    @Test func deltaUpdateGolden() {
        let text = Self.playlist(skipped: 1).render()
        #expect(text.hasPrefix("#EXTM3U\n#EXT-X-VERSION:9\n"), "EXT-X-SKIP needs version 9")
        #expect(text.contains("#EXT-X-MEDIA-SEQUENCE:40\n#EXT-X-MAP:URI=\"init.mp4\"\n#EXT-X-SKIP:SKIPPED-SEGMENTS=1\n#EXT-X-PROGRAM-DATE-TIME:2026-11-23T10:00:02.000Z\n"), "\(text)")
        #expect(!text.contains("seg-40.m4s"))
    }

    @Test func aMapChangedAmongSkippedSegmentsIsRestated() {
        var p = Self.playlist(skipped: 1)
        p.segments[0].mapURI = "init-2.mp4"  // seg-40 started a new map; the delta update skips it
        let text = p.render()
        #expect(text.contains("#EXT-X-SKIP:SKIPPED-SEGMENTS=1\n#EXT-X-MAP:URI=\"init-2.mp4\"\n#EXT-X-PROGRAM-DATE-TIME:2026-11-23T10:00:02.000Z\n"), "\(text)")
        #expect(text.split(separator: "init-2.mp4", omittingEmptySubsequences: false).count == 2, "stated once")
        p.skippedSegments = 0
        #expect(p.render().split(separator: "init-2.mp4", omittingEmptySubsequences: false).count == 2, "a full playlist states it where it changed, once")
    }

    @Test func theOpenSegmentsTagsPrecedeItsParts() {
        var p = Self.playlist()
        p.trailingDiscontinuity = true
        p.trailingMapURI = "init-1.mp4"
        #expect(p.render().contains("seg-41.m4s\n#EXT-X-DISCONTINUITY\n#EXT-X-MAP:URI=\"init-1.mp4\"\n#EXT-X-PART:DURATION=0.33333,URI=\"part-42.0.m4s\",INDEPENDENT=YES\n"))
        p.trailingParts = []
        #expect(!p.render().contains("init-1.mp4") && !p.render().contains("DISCONTINUITY"), "no parts, no tags")
    }

    @Test func partTargetIsRoundedUpToTheMillisecond() {
        for (target, text) in [(0.2, "0.200"), (0.3, "0.300"), (1.0 / 3.0, "0.334"), (0.5, "0.500"), (0.3333, "0.334")] {
            let p = MediaPlaylist(targetDuration: 1, mapURI: "i", segments: [], partTarget: target).render()
            #expect(p.contains("#EXT-X-PART-INF:PART-TARGET=\(text)\n"), "\(target): \(p)")
        }
    }

    static let skipTable: [(durations: [Double], boundary: Double, skipped: Int)] = [
        ([], 12, 0),
        ([2, 2, 2], 12, 0),
        ([2, 2, 2, 2, 2, 2], 12, 0),
        ([2, 2, 2, 2, 2, 2, 2], 12, 1),
        ([2, 2, 2, 2, 2, 2, 2, 2, 2, 2], 12, 4),
        ([2, 2, 2, 2, 2, 2, 1.5, 2], 12, 1),
    ]

    @Test func skippableSegmentsKeepTheSkipBoundary() {
        for row in Self.skipTable {
            #expect(MediaPlaylist.skippableSegments(durations: row.durations, skipBoundary: row.boundary) == row.skipped, "\(row)")
        }
    }
}

@Suite struct DeliveryDirectivesTests {
    static let parsed: [([String: String], DeliveryDirectives?)] = [
        ([:], DeliveryDirectives()),
        (["_HLS_msn": "12"], DeliveryDirectives(mediaSequence: 12)),
        (["_HLS_msn": "12", "_HLS_part": "3"], DeliveryDirectives(mediaSequence: 12, part: 3)),
        (["_HLS_msn": "12", "_HLS_part": "0", "_HLS_skip": "YES"], DeliveryDirectives(mediaSequence: 12, part: 0, skip: true)),
        (["_HLS_skip": "v2"], DeliveryDirectives(skip: true)),
        (["token": "abc", "_HLS_msn": "1"], DeliveryDirectives(mediaSequence: 1)),
        (["_HLS_part": "3"], nil),
        (["_HLS_msn": "-1"], nil),
        (["_HLS_msn": "x"], nil),
        (["_HLS_msn": "1", "_HLS_part": "1.5"], nil),
        (["_HLS_skip": "NO"], nil),
    ]

    @Test func parsesOrRefuses() {
        for (query, expected) in Self.parsed {
            #expect((try? DeliveryDirectives(query: query)) == expected, "\(query)")
        }
        #expect(throws: DeliveryDirectives.ParseError.partWithoutMediaSequence) { try DeliveryDirectives(query: ["_HLS_part": "3"]) }
    }

    /// Edge: segments up to 9 complete, segment 10 being written with parts 0...2. Part target
    /// 1/3 s, so the Advance Part Limit is 9.
    static let edge = PlaylistEdge(lastCompleteSequence: 9, lastPart: (10, 2))
    static let decisions: [(msn: Int?, part: Int?, expected: BlockingReloadDecision)] = [
        (nil, nil, .respond),
        (9, nil, .respond),  // Safari: segment 9 is complete
        (10, nil, .hold),  // Safari: segment 10 is still being written
        (12, nil, .hold),
        (13, nil, .badRequest("")),  // more than two past the last segment
        (10, 2, .respond),
        (10, 3, .hold),  // the preload-hinted part
        (10, 11, .hold),
        (10, 12, .badRequest("")),  // past the Advance Part Limit
        (11, 0, .hold),
        (11, 8, .hold),
        (11, 9, .badRequest("")),
        (9, 5, .respond),
        (9, 40, .respond),  // segment 9 is complete and segment 10 has parts: later exists
        (3, 0, .respond),
    ]

    @Test func blockingReloadDecisions() {
        for row in Self.decisions {
            let d = BlockingReloadDecision.decide(DeliveryDirectives(mediaSequence: row.msn, part: row.part), edge: Self.edge, partTarget: 1.0 / 3.0)
            switch (d, row.expected) {
            case (.badRequest(let message), .badRequest): #expect(!message.isEmpty)
            default: #expect(d == row.expected, "msn \(String(describing: row.msn)) part \(String(describing: row.part))")
            }
        }
    }

    @Test func anEndedPlaylistNeverHolds() {
        var edge = Self.edge
        edge.ended = true
        #expect(BlockingReloadDecision.decide(DeliveryDirectives(mediaSequence: 12, part: 0), edge: edge, partTarget: 0.5) == .respond)
    }

    @Test func beforeTheFirstPartEverythingWaits() {
        let empty = PlaylistEdge(lastCompleteSequence: nil, lastPart: nil)
        #expect(BlockingReloadDecision.decide(DeliveryDirectives(mediaSequence: 0, part: 0), edge: empty, partTarget: 0.5) == .hold)
        #expect(BlockingReloadDecision.decide(DeliveryDirectives(mediaSequence: 0), edge: empty, partTarget: 0.5) == .hold)
        #expect(BlockingReloadDecision.decide(DeliveryDirectives(mediaSequence: 2), edge: empty, partTarget: 0.5) == .badRequest("_HLS_msn=2 is more than two segments past the last one (-1); reload the playlist without directives."))
    }

    @Test func advancePartLimit() {
        #expect(BlockingReloadDecision.advancePartLimit(partTarget: 1.0 / 3.0) == 9)
        #expect(BlockingReloadDecision.advancePartLimit(partTarget: 0.5) == 6)
        #expect(BlockingReloadDecision.advancePartLimit(partTarget: 0.2) == 15)
        #expect(BlockingReloadDecision.advancePartLimit(partTarget: 1) == 3)
    }
}
