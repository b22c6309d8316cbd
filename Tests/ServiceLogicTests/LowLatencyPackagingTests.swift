import Foundation
import Logging
@testable import Packager
import HLS
import StorecastRuntime
import StorecastWire
import Synchronization
import Testing

/// LL-HLS parts from the segmenter, the rendition's edge, and the store that wakes blocked requests.
@Suite struct LowLatencyPartTests {
    static let video = RenditionSegmenterTests.video
    static let audio = TrackConfig(trackID: 2, kind: .audio, codec: "aac", name: "audio", timescale: 48_000, sampleRate: 48_000, channels: 2, config: [0x11, 0x90])

    static func frame(_ i: Int, keyframe: Bool) -> AccessUnit {
        AccessUnit(streamID: 1, trackID: 1, flags: keyframe ? 1 : 0, sequence: UInt64(i), dts: Int64(i) * 3000, compositionOffset: 0, data: [UInt8(i & 0xFF), 0xAB])
    }

    struct Run {
        var parts: [PackagedPart] = []
        var segments: [PackagedSegment] = []
        mutating func take(_ o: SegmenterOutput) { parts += o.parts; if let s = o.segment { segments.append(s) } }
    }

    @Test func videoPartsFitThePartTargetAndKeyframesMakeThemIndependent() {
        var s = RenditionSegmenter(track: Self.video, targetDuration: 2, partTarget: 1.0 / 3.0)
        var run = Run()
        for i in 0..<150 { run.take(s.append(Self.frame(i, keyframe: i % 60 == 0))) }
        #expect(run.segments.map(\.sequence) == [0, 1])
        let firstSegment = run.parts.filter { $0.sequence == 0 }
        #expect(firstSegment.map(\.index) == Array(0..<6))
        #expect(firstSegment.map(\.sampleCount) == Array(repeating: 10, count: 6))
        #expect(firstSegment.map(\.independent) == [true, false, false, false, false, false])
        #expect(run.parts.allSatisfy { $0.duration <= 0.334 }, "\(run.parts.map(\.duration))")
        // A segment is its parts back to back, and says where each one sits.
        for segment in run.segments {
            let parts = run.parts.filter { $0.sequence == segment.sequence }
            #expect(segment.bytes == parts.flatMap(\.bytes))
            #expect(segment.parts.map(\.length) == parts.map(\.bytes.count))
            #expect(segment.parts.map(\.offset) == parts.indices.map { i in parts[..<i].reduce(0) { $0 + $1.bytes.count } })
            #expect(segment.ticks == parts.reduce(0) { $0 + $1.ticks })
        }
        // The open third segment is already out as parts, before it is finished.
        #expect(run.parts.filter { $0.sequence == 2 }.count == 2)
        let last = s.finish()
        #expect(last.segment?.sequence == 2 && last.segment?.sampleCount == 30)
        #expect(last.parts.map(\.index) == [2])
    }

    @Test func aKeyframeInsideASegmentStartsAnIndependentPart() {
        var s = RenditionSegmenter(track: Self.video, targetDuration: 4, partTarget: 1.0 / 3.0)
        var run = Run()
        for i in 0..<80 { run.take(s.append(Self.frame(i, keyframe: i == 0 || i == 45))) }
        #expect(run.segments.isEmpty, "1.5 s is under half the 4 s target: no segment cut")
        #expect(run.parts.map(\.sampleCount) == [10, 10, 10, 10, 5, 10, 10, 10])
        #expect(run.parts.map(\.independent) == [true, false, false, false, false, true, false, false])
    }

    @Test func audioPartsAreAllIndependent() {
        var s = RenditionSegmenter(track: Self.audio, targetDuration: 2, partTarget: 1.0 / 3.0)
        var run = Run()
        for i in 0..<200 {
            run.take(s.append(AccessUnit(streamID: 1, trackID: 2, flags: 1, sequence: UInt64(i), dts: Int64(i) * 1024, compositionOffset: 0, data: [1])))
        }
        #expect(run.parts.allSatisfy { $0.independent })
        #expect(run.parts.allSatisfy { $0.duration <= 1.0 / 3.0 })
        #expect(run.parts.first?.sampleCount == 15)
        #expect(run.segments.count == 2)
    }

    struct SpliceCase: Sendable, CustomTestStringConvertible {
        var name: String
        var workerA: Range<Int>
        var workerB: Range<Int>
        /// Segments as (first frame, samples, length in frames).
        var segments: [(Int, Int, Int)]
        var dropped: Int
        var testDescription: String { name }
    }

    static let spliceCases: [SpliceCase] = [
        // A published parts up to frame 89; B replays from 60. Published parts never change, so
        // A's frame 99 is held until B's next keyframe at 120: a freeze, not a discontinuity.
        SpliceCase(name: "B's keyframe is inside what was published", workerA: 0..<100, workerB: 60..<200,
                   segments: [(0, 60, 60), (60, 40, 60), (120, 60, 60), (180, 20, 20)], dropped: 60),
        // A's unpublished part holds 90...93 and frame 94; B starts with a keyframe at 92.
        SpliceCase(name: "B's keyframe is inside the part being written", workerA: 0..<95, workerB: 92..<200,
                   segments: [(0, 60, 60), (60, 32, 32), (92, 88, 88), (180, 20, 20)], dropped: 3),  // 120 is under half a target after 92: no cut
    ]

    @Test(arguments: spliceCases)
    func splicingNeverChangesAPublishedPart(_ c: SpliceCase) {
        var s = RenditionSegmenter(track: Self.video, targetDuration: 2, partTarget: 1.0 / 3.0)
        var run = Run()
        for f in c.workerA { run.take(s.append(Self.frame(f, keyframe: f % 60 == 0))) }
        let publishedBefore = run.parts
        for f in c.workerB { run.take(s.append(Self.frame(f, keyframe: f == c.workerB.lowerBound || f % 60 == 0))) }
        run.take(s.finish())
        #expect(run.segments.map { Int($0.startTime / 3000) } == c.segments.map(\.0))
        #expect(run.segments.map(\.sampleCount) == c.segments.map(\.1))
        #expect(run.segments.map { Int($0.ticks / 3000) } == c.segments.map(\.2))
        #expect(s.replayedUnitsDropped == c.dropped)
        for (a, b) in zip(run.segments, run.segments.dropFirst()) { #expect(a.startTime + a.ticks == b.startTime, "timeline continues") }
        // Every part handed out before the splice is byte for byte inside its final segment.
        for p in publishedBefore {
            let segment = run.segments.first { $0.sequence == p.sequence }
            let r = segment?.parts[p.index]
            #expect(r.map { Array(segment!.bytes[$0.offset..<($0.offset + $0.length)]) } == p.bytes, "part \(p.sequence).\(p.index)")
        }
    }
}

@Suite struct RenditionEdgeTests {
    static func fed(frames: Int) throws -> RenditionPackage {
        var r = try StreamPackageTests.rendition("360p", kind: .video, segments: 0)
        var s = RenditionSegmenter(track: LowLatencyPartTests.video, targetDuration: 2, partTarget: 1.0 / 3.0)
        for i in 0..<frames { r.add(s.append(LowLatencyPartTests.frame(i, keyframe: i % 60 == 0)), window: 3) }
        return r
    }

    @Test func edgeAndLookupFollowTheParts() throws {
        let r = try Self.fed(frames: 150)  // segments 0 and 1 done, parts 2.0 and 2.1 out
        #expect(r.edge == PlaylistEdge(lastCompleteSequence: 1, lastPart: (2, 1)))
        #expect(r.part(2, 1) != nil && r.part(2, 2) == nil)
        #expect(r.part(1, 5) == r.segment(1).map { s in Array(s.bytes[s.parts[5].offset..<(s.parts[5].offset + s.parts[5].length)]) })
        #expect(r.part(1, 6) == nil)
        let windowed = try Self.fed(frames: 330)  // segments 0...4, window of 3
        #expect(windowed.segments.map(\.sequence) == [2, 3, 4])
        #expect(windowed.segment(4) != nil)
        #expect(windowed.segment(1) != nil && windowed.part(1, 0) == r.part(1, 0), "out of the window, fetchable for its grace (RFC 8216 6.2.2)")
        #expect(windowed.segment(5) == nil && windowed.part(5, 9) == nil)
    }

    /// PART-HOLD-BACK is three PART-TARGETs as the playlist writes them (rounded up to the
    /// millisecond), never three of the unrounded target (1.000 was below 3 × 0.334).
    @Test(arguments: [(0.2, "0.200", "0.600"), (0.25, "0.250", "0.750"), (1.0 / 3.0, "0.334", "1.002"), (0.3, "0.300", "0.900"), (0.4999, "0.500", "1.500"), (0.5, "0.500", "1.500")])
    func partHoldBackIsThreeWrittenPartTargets(_ row: (target: Double, written: String, hold: String)) throws {
        let text = try Self.fed(frames: 330).mediaPlaylist(targetDuration: 2, lowLatency: LowLatencySettings(partTarget: row.target))
        #expect(text.contains("PART-HOLD-BACK=\(row.hold)\n#EXT-X-PART-INF:PART-TARGET=\(row.written)\n"), "\(text)")
    }

    @Test func lowLatencyPlaylistListsRecentPartsAndHintsTheNextOne() throws {
        var r = try Self.fed(frames: 330)
        let ll = LowLatencySettings(partTarget: 1.0 / 3.0)
        var text = r.mediaPlaylist(targetDuration: 2, lowLatency: ll, reports: [RenditionReport(uri: "../240p/index.m3u8", lastSequence: 5, lastPart: 2)])
        #expect(text.contains("#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,CAN-SKIP-UNTIL=12.000,PART-HOLD-BACK=1.002\n#EXT-X-PART-INF:PART-TARGET=0.334\n"))
        #expect(text.contains("#EXT-X-PART:DURATION=0.33333,URI=\"part-2.0.m4s\",INDEPENDENT=YES\n#EXT-X-PART:DURATION=0.33333,URI=\"part-2.1.m4s\"\n"))
        #expect(text.contains("URI=\"part-5.0.m4s\",INDEPENDENT=YES\n#EXT-X-PART:DURATION=0.33333,URI=\"part-5.1.m4s\"\n#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"part-5.2.m4s\"\n#EXT-X-RENDITION-REPORT:URI=\"../240p/index.m3u8\",LAST-MSN=5,LAST-PART=2\n"), "\(text)")
        #expect(!text.contains("ENDLIST"))
        r.ended = true
        text = r.mediaPlaylist(targetDuration: 2, lowLatency: ll)
        #expect(!text.contains("PRELOAD-HINT") && text.hasSuffix("#EXT-X-ENDLIST\n"))
        #expect(!r.mediaPlaylist(targetDuration: 2, lowLatency: nil).contains("EXT-X-PART"))
    }

    @Test func mediaNamesRoundTrip() {
        let uris = PlaylistURIs(query: "")
        #expect(PlaylistURIs.resource(uris.segment(12)) == .segment(12))
        #expect(PlaylistURIs.resource(uris.part(12, 3)) == .part(12, 3))
        #expect(PlaylistURIs.resource(uris.part(0, 0)) == .part(0, 0) && PlaylistURIs.resource(uris.segment(0)) == .segment(0))
        for bad in ["seg-.m4s", "seg--1.m4s", "seg-01.m4s", "part-1.00.m4s", "init-07.mp4", "seg-+5.m4s", "part-+1.2.m4s", "part-1.-2.m4s", "seg-1234567890123456789.m4s", "part-1.m4s", "part-1.2.3.m4s", "part-a.1.m4s", "seg-1.mp4", "index.m3u8", "part-1..m4s"] {
            #expect(PlaylistURIs.resource(bad) == nil, "\(bad)")
        }
    }
}

@Suite struct PackageStoreWaitTests {
    @Test func anUpdateWakesABlockedRequest() async throws {
        let store = PackageStore()
        let version = store.snapshot("t/s").version
        let clock = ContinuousClock()
        let started = clock.now
        async let waited: Void = store.waitForChange("t/s", after: version, timeout: .seconds(30))
        while store.blockedRequests == 0 { try await Task.sleep(for: .milliseconds(5)) }
        store.update("t/s") { $0 = StreamPackage(streamID: 1, tenant: "t", name: "s", renditions: [:]) }
        await waited
        #expect(clock.now - started < .seconds(30), "woken by the update, not the timeout")
        #expect(store.blockedRequests == 0)
        #expect(store.snapshot("t/s").version == version + 1)
    }

    /// Chunks wake only the requests streaming a part; playlists and whole parts wait for more.
    @Test func chunkOnlyUpdatesWakeOnlyStreamingRequests() async throws {
        let store = PackageStore()
        store.update("t/s") { $0 = StreamPackage(streamID: 1, tenant: "t", name: "s", renditions: [:]) }
        let version = store.snapshot("t/s").version
        let playlistWoken = Mutex(false), streamWoken = Mutex(false)
        let playlist = Task { await store.waitForChange("t/s", after: version, timeout: .seconds(30)); playlistWoken.withLock { $0 = true } }
        let streaming = Task { await store.waitForChange("t/s", after: version, timeout: .seconds(30), chunks: true); streamWoken.withLock { $0 = true } }
        while store.blockedRequests < 2 { try await Task.sleep(for: .milliseconds(5)) }
        store.update("t/s", chunksOnly: true) { $0?.ended = false }
        await streaming.value
        #expect(streamWoken.withLock { $0 })
        #expect(store.blockedRequests == 1 && !playlistWoken.withLock { $0 }, "the playlist request still waits")
        store.update("t/s") { $0?.ended = false }
        await playlist.value
        #expect(playlistWoken.withLock { $0 } && store.blockedRequests == 0)
    }

    @Test func aStaleVersionReturnsAtOnceAndATimeoutEndsTheWait() async {
        let store = PackageStore()
        store.update("t/s") { $0 = StreamPackage(streamID: 1, tenant: "t", name: "s", renditions: [:]) }
        await store.waitForChange("t/s", after: 0, timeout: .seconds(30))  // already past version 0
        let before = store.snapshot("t/s").version
        await store.waitForChange("t/s", after: before, timeout: .milliseconds(50))
        #expect(store.snapshot("t/s").version == before)
        #expect(store.blockedRequests == 0, "the timed-out waiter was removed")
    }
}

@Suite struct ViewerAccountingTests {
    /// (session, seconds) sightings, then the count at `now` over a 30 s window.
    static let table: [(sightings: [(String, Double)], now: Double, viewers: Int)] = [
        ([], 100, 0),
        ([("a", 100), ("a", 101), ("a", 102)], 102, 1),
        ([("a", 100), ("b", 101)], 110, 2),
        ([("a", 60), ("b", 101)], 110, 1),  // a left more than 30 s ago
        ([("a", 60), ("a", 95), ("b", 101)], 110, 2),  // a came back
        ([("a", 80), ("b", 80)], 110, 2),  // exactly at the window's edge
        ([("a", 79.9)], 110, 0),
    ]

    @Test func countsDistinctSessionsInTheWindow() {
        for row in Self.table {
            var w = ViewerWindow()
            for (session, t) in row.sightings { w.saw(session, at: t) }
            #expect(w.count(now: row.now, window: 30) == row.viewers, "\(row)")
        }
    }

    @Test func sessionsPreferThePlayersOwnID() {
        #expect(ViewerAccounting.session(playbackSessionID: "F00D", address: "10.0.0.1", userAgent: "AppleCoreMedia") == "id:10.0.0.1|F00D")
        #expect(ViewerAccounting.session(playbackSessionID: nil, address: "10.0.0.1", userAgent: "hls.js") != ViewerAccounting.session(playbackSessionID: nil, address: "10.0.0.2", userAgent: "hls.js"))
        #expect(ViewerAccounting.session(playbackSessionID: "", address: "10.0.0.1", userAgent: "x") == "ua:10.0.0.1|x")
    }

    @Test func reportsAndForgetsIdleStreams() {
        let clock = Mutex(1_000.0)
        let accounting = ViewerAccounting(now: { clock.withLock { $0 } })
        accounting.served(stream: "t/a", session: "one", bytes: 100)
        accounting.served(stream: "t/a", session: "two", bytes: 100)
        accounting.served(stream: "t/b", session: "one", bytes: 100)
        #expect(accounting.report() == ["t/a": 2, "t/b": 1])
        clock.withLock { $0 = 1_040 }
        #expect(accounting.report() == ["t/a": 0, "t/b": 0], "reported as 0 once")
        #expect(accounting.report() == [:])
    }
}

@Suite struct DVRWindowTests {
    static func segment(_ n: Int, discontinuity: Bool = false) -> SegmenterOutput {
        SegmenterOutput(parts: [], segment: PackagedSegment(sequence: n, duration: 2, bytes: [UInt8](repeating: 1, count: 100), discontinuity: discontinuity, sampleCount: 60))
    }

    @Test func memoryKeepsTheLiveWindowAndTheListKeepsTheDVRWindow() throws {
        var r = try StreamPackageTests.rendition("360p", kind: .video, segments: 0)
        var expired: [Int] = []
        for n in 0..<12 { expired += r.add(Self.segment(n, discontinuity: n == 1), window: 3, dvrWindow: 10) }
        #expect(r.segments.map(\.sequence) == [9, 10, 11], "three in memory")
        #expect(r.archived.map(\.sequence) == [7, 8], "listed up to 10 s in all")
        #expect(r.archived.allSatisfy { $0.bytes.isEmpty })
        #expect(r.discontinuitySequence == 1, "segment 1's discontinuity scrolled out of the list")
        #expect(r.archivedSegment(7)?.sequence == 7 && r.archivedSegment(9) == nil && r.segment(9) != nil)
        let text = r.mediaPlaylist(targetDuration: 2, lowLatency: nil)
        #expect(text.contains("#EXT-X-MEDIA-SEQUENCE:7\n#EXT-X-DISCONTINUITY-SEQUENCE:1\n"), "\(text)")
        #expect(text.components(separatedBy: "#EXTINF").count - 1 == 5)
        // Out of the list, a segment's file stays for its duration plus the longest playlist that
        // listed it (RFC 8216 6.2.2): segment 0 left when segment 5 came (media time 12 s, the
        // playlist 12 s long then), so it goes once 2 + 12 s more have been added (segment 12).
        #expect(expired.isEmpty, "nothing out of the list long enough yet")
        #expect(r.departed.map(\.segment.sequence) == Array(0...6))
        #expect(r.archivedSegment(0)?.sequence == 0 && r.segment(0) == nil, "still fetchable, from disk")
        for n in 12..<19 { expired += r.add(Self.segment(n), window: 3, dvrWindow: 10) }
        #expect(expired == [0, 1, 2, 3, 4, 5, 6], "files of segments past their grace can go")
        #expect(r.archivedSegment(6) == nil && r.archivedSegment(7)?.sequence == 7)
    }

    /// A disk that stalls: writes wait in memory up to the archive's limit, then segments are
    /// skipped (not queued) instead of memory growing; once the disk moves, what was queued lands.
    @Test func aStalledDiskHoldsAtMostTheLimitInMemory() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dvr-cap-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let archive = DVRArchive(root: dir.path, logger: Logger(label: "test"), maximumQueuedBytes: 250)
        let disk = DispatchSemaphore(value: 0)
        archive.stall { disk.wait() }
        let written = (0..<4).map { archive.write("t/s", rendition: "360p", segment: Self.segment($0).segment!) }
        #expect(written == [true, true, false, false], "100-byte segments: two fit in 250 bytes")
        #expect(archive.queued == 200)
        disk.signal()
        archive.drain()
        #expect(archive.queued == 0)
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent("t/s/360p").path).sorted()
        #expect(files == ["seg-0.m4s", "seg-1.m4s"])
        #expect(archive.write("t/s", rendition: "360p", segment: Self.segment(4).segment!), "room again once the disk caught up")
        archive.drain()
    }

    /// EXT-X-TARGETDURATION never changes back (RFC 8216 6.2.1): a passed-through source's one
    /// long GOP raises it, and it stays raised after that segment leaves the window.
    @Test func theTargetDurationNeverShrinks() throws {
        var r = try StreamPackageTests.rendition("source", kind: .video, segments: 0)
        let durations = [2.0, 2.0, 4.4, 2.0, 2.0, 2.0, 2.0]
        var targets: [String] = []
        for (n, d) in durations.enumerated() {
            var o = Self.segment(n)
            o.segment!.duration = d
            r.add(o, window: 3)
            let text = r.mediaPlaylist(targetDuration: 2, lowLatency: LowLatencySettings(partTarget: 1.0 / 3.0))
            targets.append(text.firstMatch(of: /#EXT-X-TARGETDURATION:(\d+)\n/).map { String($0.1) } ?? "?")
        }
        #expect(targets == ["2", "2", "4", "4", "4", "4", "4"], "4.4 s rounds to 4 and stays after segment 2 left: \(targets)")
    }

    @Test func withoutDVRNothingIsArchived() throws {
        var r = try StreamPackageTests.rendition("360p", kind: .video, segments: 0)
        for n in 0..<6 { #expect(r.add(Self.segment(n), window: 3).isEmpty) }
        #expect(r.archived.isEmpty && r.segments.map(\.sequence) == [3, 4, 5])
    }

    /// A player that read the playlist just before its first segment slid out must still get
    /// that segment (Chromium's native player fetched it 10 ms after the playlist and got 404).
    /// Golden table: after each segment is added to a 3-segment window of 2 s segments, which
    /// are listed and which are still fetchable. A segment leaving at media time t stays until
    /// t + its 2 s + 8 s (the longest playlist with it: three segments and the parts of the one
    /// that pushed it out).
    @Test func segmentsOutOfTheLiveWindowStayFetchableForTheirGrace() throws {
        var r = try StreamPackageTests.rendition("360p", kind: .video, segments: 0)
        let table: [(added: Int, listed: [Int], fetchable: [Int])] = [
            (0, [0], [0]),
            (2, [0, 1, 2], [0, 1, 2]),
            (3, [1, 2, 3], [0, 1, 2, 3]),     // 0 left at 8 s, until 18 s
            (7, [5, 6, 7], Array(0...7)),
            (8, [6, 7, 8], Array(1...8)),     // 18 s: 0 is gone
            (12, [10, 11, 12], Array(5...12)),
        ]
        var next = 0
        for row in table {
            while next <= row.added { #expect(r.add(Self.segment(next), window: 3).isEmpty, "no files without a DVR"); next += 1 }
            #expect(r.listedSegments.map(\.sequence) == row.listed, "after \(row.added)")
            let fetchable = (0...12).filter { r.segment($0)?.bytes.count == 100 }
            #expect(fetchable == row.fetchable, "after \(row.added)")
            #expect(r.archivedSegment(row.fetchable[0]) == nil, "in memory, not on disk")
        }
        let text = r.mediaPlaylist(targetDuration: 2, lowLatency: nil)
        #expect(text.contains("#EXT-X-MEDIA-SEQUENCE:10\n") && !text.contains("seg-9.m4s"), "departed segments are not listed: \(text)")
    }
}

/// The whole media playlist text of a live rendition, packaged from frames with a fixed clock
/// (the stream's time 0 at 2026-11-24T06:00:00Z): PROGRAM-DATE-TIME from the clock anchor,
/// parts of the last segments, the open segment's parts, the hint and a rendition report.
@Suite struct GoldenMediaPlaylistTests {
    @Test func liveRenditionWithAFixedClock() throws {
        var r = try StreamPackageTests.rendition("360p", kind: .video, segments: 0)
        var s = RenditionSegmenter(track: LowLatencyPartTests.video, targetDuration: 2, partTarget: 1.0 / 3.0, firstSequence: 1)
        s.clockAnchor = ClockAnchor(wallSeconds: 1_795_500_000, streamSeconds: 0)
        for i in 0..<335 { r.add(s.append(LowLatencyPartTests.frame(i, keyframe: i % 60 == 0)), window: 4) }
        let text = r.mediaPlaylist(targetDuration: 2, lowLatency: LowLatencySettings(partTarget: 1.0 / 3.0),
                                   reports: [RenditionReport(uri: "../480p/index.m3u8", lastSequence: 6, lastPart: 3)])
        #expect(text == Self.golden, "\(text)")
    }

    static let golden = """
        #EXTM3U
        #EXT-X-VERSION:7
        #EXT-X-TARGETDURATION:2
        #EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,CAN-SKIP-UNTIL=12.000,PART-HOLD-BACK=1.002
        #EXT-X-PART-INF:PART-TARGET=0.334
        #EXT-X-MEDIA-SEQUENCE:2
        #EXT-X-MAP:URI="init.mp4"
        #EXT-X-PROGRAM-DATE-TIME:2026-11-24T06:00:02.000Z
        #EXTINF:2.00000,
        seg-2.m4s
        #EXT-X-PROGRAM-DATE-TIME:2026-11-24T06:00:04.000Z
        #EXT-X-PART:DURATION=0.33333,URI="part-3.0.m4s",INDEPENDENT=YES
        #EXT-X-PART:DURATION=0.33333,URI="part-3.1.m4s"
        #EXT-X-PART:DURATION=0.33333,URI="part-3.2.m4s"
        #EXT-X-PART:DURATION=0.33333,URI="part-3.3.m4s"
        #EXT-X-PART:DURATION=0.33333,URI="part-3.4.m4s"
        #EXT-X-PART:DURATION=0.33333,URI="part-3.5.m4s"
        #EXTINF:2.00000,
        seg-3.m4s
        #EXT-X-PROGRAM-DATE-TIME:2026-11-24T06:00:06.000Z
        #EXT-X-PART:DURATION=0.33333,URI="part-4.0.m4s",INDEPENDENT=YES
        #EXT-X-PART:DURATION=0.33333,URI="part-4.1.m4s"
        #EXT-X-PART:DURATION=0.33333,URI="part-4.2.m4s"
        #EXT-X-PART:DURATION=0.33333,URI="part-4.3.m4s"
        #EXT-X-PART:DURATION=0.33333,URI="part-4.4.m4s"
        #EXT-X-PART:DURATION=0.33333,URI="part-4.5.m4s"
        #EXTINF:2.00000,
        seg-4.m4s
        #EXT-X-PROGRAM-DATE-TIME:2026-11-24T06:00:08.000Z
        #EXT-X-PART:DURATION=0.33333,URI="part-5.0.m4s",INDEPENDENT=YES
        #EXT-X-PART:DURATION=0.33333,URI="part-5.1.m4s"
        #EXT-X-PART:DURATION=0.33333,URI="part-5.2.m4s"
        #EXT-X-PART:DURATION=0.33333,URI="part-5.3.m4s"
        #EXT-X-PART:DURATION=0.33333,URI="part-5.4.m4s"
        #EXT-X-PART:DURATION=0.33333,URI="part-5.5.m4s"
        #EXTINF:2.00000,
        seg-5.m4s
        #EXT-X-PART:DURATION=0.33333,URI="part-6.0.m4s",INDEPENDENT=YES
        #EXT-X-PART:DURATION=0.33333,URI="part-6.1.m4s"
        #EXT-X-PART:DURATION=0.33333,URI="part-6.2.m4s"
        #EXT-X-PRELOAD-HINT:TYPE=PART,URI="part-6.3.m4s"
        #EXT-X-RENDITION-REPORT:URI="../480p/index.m3u8",LAST-MSN=6,LAST-PART=3

        """
}

/// Forwarded headers are believed only from configured proxies (issue 23).
@Suite struct ClientAddressTests {
    static let cdn: Set<String> = ["10.0.0.5", "10.0.0.6"]
    static let cases: [(peer: String?, forwarded: String?, expected: String?)] = [
        ("203.0.113.9", "1.2.3.4", "203.0.113.9"),            // not a proxy: its header is ignored
        ("10.0.0.5", "198.51.100.7", "198.51.100.7"),          // the CDN names the viewer
        ("10.0.0.5", "1.2.3.4, 198.51.100.7", "198.51.100.7"), // a forged first hop is not believed
        ("10.0.0.5", "198.51.100.7, 10.0.0.6", "198.51.100.7"),// through two proxies
        ("10.0.0.5", nil, "10.0.0.5"),
        ("10.0.0.5", "10.0.0.6", "10.0.0.6"),                  // only proxies listed: the first
        (nil, "1.2.3.4", nil),
    ]

    @Test(arguments: cases.indices) func resolves(_ i: Int) {
        let c = Self.cases[i]
        #expect(ClientAddress.resolve(peer: c.peer, forwardedFor: c.forwarded, trustedProxies: Self.cdn) == c.expected)
    }

    @Test func viewerWindowIsBounded() {
        var window = ViewerWindow()
        for i in 0..<(ViewerWindow.maximumSessions + 10) { window.saw("s\(i)", at: 0) }
        #expect(window.count(now: 0, window: 30) == ViewerWindow.maximumSessions)
    }
}
