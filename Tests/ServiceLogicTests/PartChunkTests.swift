@testable import Packager
import HLS
import StorecastWire
import Testing

/// Parts written as CMAF chunks: handed out before the part is complete, and the part is its
/// chunks back to back.
@Suite struct PartChunkTests {
    typealias Event = (chunk: PartChunk?, part: PackagedPart?)

    /// Top-level box types of `bytes`, and the `mfhd` sequence number of every `moof`.
    static func boxes(_ bytes: [UInt8]) -> (types: [String], fragments: [UInt32]) {
        var types: [String] = [], fragments: [UInt32] = []
        var p = 0
        func u32(_ at: Int) -> UInt32 { bytes[at..<at + 4].reduce(0) { $0 << 8 | UInt32($1) } }
        while p + 8 <= bytes.count {
            let size = Int(u32(p))
            let type = String(decoding: bytes[p + 4..<p + 8], as: UTF8.self)
            types.append(type)
            if type == "moof" { fragments.append(u32(p + 8 + 12)) }  // moof header, mfhd header + version/flags
            guard size >= 8 else { break }
            p += size
        }
        return (types, fragments)
    }

    static func run(chunkTarget: Double, frames: Int) -> (events: [Event], segments: [PackagedSegment]) {
        var s = RenditionSegmenter(track: LowLatencyPartTests.video, targetDuration: 2, partTarget: 1.0 / 3.0, chunkTarget: chunkTarget)
        var events: [Event] = [], segments: [PackagedSegment] = []
        for i in 0..<frames {
            let o = s.append(LowLatencyPartTests.frame(i, keyframe: i % 60 == 0))
            events += o.chunks.map { ($0, nil) } + o.parts.map { (nil, $0) }
            if let seg = o.segment { segments.append(seg) }
        }
        return (events, segments)
    }

    /// Chunk target → CMAF chunks per 10-frame (1/3 s) part at 30 fps, and how many of them are
    /// handed out early (the last one comes as the complete part).
    static let table: [(chunkTarget: Double, moofs: Int, early: Int)] = [
        (0, 1, 0),
        (0.05, 5, 4),  // every 2 frames
        (0.1, 4, 3),  // every 3 frames, the 10th alone
        (0.2, 2, 1),
        (0.34, 1, 0),  // longer than the part
    ]

    @Test func chunksComeFirstAndMakeUpThePart() {
        for row in Self.table {
            let (events, segments) = Self.run(chunkTarget: row.chunkTarget, frames: 150)
            let parts = events.compactMap(\.part)
            #expect(parts.count == 14, "\(row)")
            for (n, part) in parts.enumerated() {
                let position = events.firstIndex { $0.part == part }!
                let chunks = events[..<position].compactMap(\.chunk).filter { $0.sequence == part.sequence && $0.index == part.index }
                #expect(events[position...].compactMap(\.chunk).allSatisfy { $0.sequence != part.sequence || $0.index != part.index }, "no chunk after its part")
                #expect(chunks.map(\.offset) == chunks.indices.map { i in chunks[..<i].reduce(0) { $0 + $1.bytes.count } }, "\(row)")
                #expect(Array(part.bytes.prefix(chunks.reduce(0) { $0 + $1.bytes.count })) == chunks.flatMap(\.bytes), "chunks are a prefix of the part")
                let (types, _) = Self.boxes(part.bytes)
                #expect(types == Array(repeating: ["moof", "mdat"], count: row.moofs).flatMap { $0 }, "\(row) part \(n): \(types)")
                #expect(chunks.count == row.early, "\(row) part \(n)")
            }
            // Fragment sequence numbers keep rising through every segment.
            for segment in segments {
                let fragments = Self.boxes(segment.bytes).fragments
                #expect(zip(fragments, fragments.dropFirst()).allSatisfy { $0 < $1 }, "\(fragments)")
                #expect(fragments.count == row.moofs * 6, "\(row)")
            }
        }
    }

    @Test(arguments: LowLatencyPartTests.spliceCases)
    func splicingNeverChangesAChunkAlreadyOut(_ c: LowLatencyPartTests.SpliceCase) {
        var s = RenditionSegmenter(track: LowLatencyPartTests.video, targetDuration: 2, partTarget: 1.0 / 3.0, chunkTarget: 0.1)
        var chunks: [PartChunk] = [], segments: [PackagedSegment] = []
        func take(_ o: SegmenterOutput) { chunks += o.chunks; if let seg = o.segment { segments.append(seg) } }
        for f in c.workerA { take(s.append(LowLatencyPartTests.frame(f, keyframe: f % 60 == 0))) }
        let outBefore = chunks
        #expect(!outBefore.isEmpty)
        for f in c.workerB { take(s.append(LowLatencyPartTests.frame(f, keyframe: f == c.workerB.lowerBound || f % 60 == 0))) }
        take(s.finish())
        for (a, b) in zip(segments, segments.dropFirst()) { #expect(a.startTime + a.ticks == b.startTime, "timeline continues") }
        for chunk in outBefore {
            let segment = try? #require(segments.first { $0.sequence == chunk.sequence })
            guard let segment, chunk.index < segment.parts.count else {
                Issue.record("chunk \(chunk.sequence).\(chunk.index) has no part in its segment")
                continue
            }
            let start = segment.parts[chunk.index].offset + chunk.offset
            #expect(Array(segment.bytes[start..<(start + chunk.bytes.count)]) == chunk.bytes, "chunk \(chunk.sequence).\(chunk.index)@\(chunk.offset)")
        }
    }

    @Test func theRenditionKeepsThePartInProgress() throws {
        var r = try StreamPackageTests.rendition("360p", kind: .video, segments: 0)
        var s = RenditionSegmenter(track: LowLatencyPartTests.video, targetDuration: 2, partTarget: 1.0 / 3.0, chunkTarget: 0.1)
        var seen: [String: [UInt8]] = [:]
        var checked = 0
        for i in 0..<200 {
            let o = s.append(LowLatencyPartTests.frame(i, keyframe: i % 60 == 0))
            r.add(o, window: 3)
            for c in o.chunks { seen["\(c.sequence).\(c.index)", default: []] += c.bytes }
            if let p = r.partInProgress {
                #expect(r.part(p.sequence, p.index) == nil, "in progress means not complete")
                #expect(p.bytes == seen["\(p.sequence).\(p.index)"])
                checked += 1
            }
            for part in o.parts {
                #expect(r.part(part.sequence, part.index) == part.bytes)
                #expect(part.bytes.starts(with: seen["\(part.sequence).\(part.index)"] ?? []))
                #expect(r.partInProgress.map { $0.sequence != part.sequence || $0.index != part.index } ?? true, "cleared once complete")
            }
        }
        #expect(checked > 100)
    }
}

/// A track that changes mid-stream keeps its old segments on their own init segment.
@Suite struct InitVersionTests {
    static func audio(config: [UInt8]) throws -> RenditionPackage {
        try RenditionPackage(track: TrackConfig(trackID: 2, kind: .audio, codec: "aac", name: "audio", timescale: 48_000, sampleRate: 48_000, channels: 2, config: config))
    }

    static func segment(_ n: Int, discontinuity: Bool = false) -> SegmenterOutput {
        SegmenterOutput(parts: [], segment: PackagedSegment(sequence: n, duration: 2, bytes: [0, 0, 0, 8, 0x6D, 0x64, 0x61, 0x74], discontinuity: discontinuity, sampleCount: 94))
    }

    @Test func playlistsChangeTheMapWhereTheTrackChanged() throws {
        var r = try Self.audio(config: [0x11, 0x90])  // 48 kHz stereo
        for n in 1...3 { r.add(Self.segment(n), window: 4) }
        let v0 = r.initSegment
        r.reconfigure(try Self.audio(config: [0x11, 0x88]))  // 48 kHz mono
        #expect(r.initVersion == 1 && r.initSegment != v0)
        #expect(r.initSegment(version: 0) == v0, "still listed, still served")
        // Before the new track's first segment completes, its parts carry the new map.
        r.add(SegmenterOutput(parts: [PackagedPart(sequence: 4, index: 0, duration: 0.32, bytes: [1], independent: true, startTime: 0, ticks: 1, sampleCount: 15, discontinuity: true)]), window: 4)
        var text = r.mediaPlaylist(targetDuration: 2, lowLatency: LowLatencySettings(partTarget: 1.0 / 3.0))
        #expect(text.contains("#EXTINF:2.00000,\nseg-3.m4s\n#EXT-X-DISCONTINUITY\n#EXT-X-MAP:URI=\"init-1.mp4\"\n#EXT-X-PART:DURATION=0.32000,URI=\"part-4.0.m4s\",INDEPENDENT=YES\n"), "\(text)")
        r.add(Self.segment(4, discontinuity: true), window: 4)
        text = r.mediaPlaylist(targetDuration: 2, lowLatency: nil)
        #expect(text.contains("#EXT-X-MAP:URI=\"init.mp4\"\n#EXTINF:2.00000,\nseg-1.m4s\n"), "\(text)")
        #expect(text.contains("seg-3.m4s\n#EXT-X-DISCONTINUITY\n#EXT-X-MAP:URI=\"init-1.mp4\"\n#EXTINF:2.00000,\nseg-4.m4s\n"), "\(text)")
        // Once the last segment of version 0 leaves the window, the playlist stops naming its
        // init segment; both stay fetchable while that segment does (RFC 8216 6.2.2), then go.
        for n in 5...7 { r.add(Self.segment(n), window: 4) }
        text = r.mediaPlaylist(targetDuration: 2, lowLatency: nil)
        #expect(text.contains("#EXT-X-MAP:URI=\"init-1.mp4\"\n#EXT-X-DISCONTINUITY\n#EXTINF:2.00000,\nseg-4.m4s\n") && !text.contains("init.mp4"), "\(text)")
        #expect(r.segment(3) != nil && r.initSegment(version: 0) == v0, "segment 3 left at 14 s, fetchable until 26 s")
        for n in 8...12 { r.add(Self.segment(n), window: 4) }
        #expect(r.segment(3) != nil && r.initSegment(version: 0) == v0)
        r.add(Self.segment(13), window: 4)
        #expect(r.segment(3) == nil && r.initSegment(version: 0) == nil && r.olderInitSegments.isEmpty)
    }

    @Test func theDVRWindowKeepsOldInitSegmentsWhileListed() throws {
        var r = try Self.audio(config: [0x11, 0x90])
        for n in 1...3 { r.add(Self.segment(n), window: 2, dvrWindow: 10) }
        r.reconfigure(try Self.audio(config: [0x11, 0x88]))
        for n in 4...6 { r.add(Self.segment(n), window: 2, dvrWindow: 10) }
        #expect(r.archived.map(\.sequence) == [2, 3, 4] && r.archived.map(\.initVersion) == [0, 0, 1])
        #expect(r.initSegment(version: 0) != nil)
        let text = r.mediaPlaylist(targetDuration: 2, lowLatency: nil)
        #expect(text.contains("#EXT-X-MAP:URI=\"init.mp4\"\n#EXTINF:2.00000,\nseg-2.m4s\n"), "\(text)")
        #expect(text.contains("seg-3.m4s\n#EXT-X-MAP:URI=\"init-1.mp4\"\n#EXTINF:2.00000,\nseg-4.m4s\n"), "\(text)")
        // The same track again changes nothing.
        r.reconfigure(try Self.audio(config: [0x11, 0x88]))
        #expect(r.initVersion == 1)
    }

    @Test func initNamesRoundTrip() {
        let uris = PlaylistURIs(query: "?token=x")
        #expect(uris.initSegment(0) == "init.mp4?token=x" && uris.initSegment(7) == "init-7.mp4?token=x")
        #expect(PlaylistURIs.resource("init.mp4") == .initSegment(0))
        #expect(PlaylistURIs.resource("init-7.mp4") == .initSegment(7))
        for bad in ["init-0.mp4", "init-.mp4", "init-x.mp4", "init.m4s", "init-1.m4s", "init-7.mp4.mp4"] {
            #expect(PlaylistURIs.resource(bad) == nil, "\(bad)")
        }
    }
}

/// Audio cut where the video cut: segment N of every rendition covers the same stream time.
@Suite struct AudioFollowsVideoCutsTests {
    static func frame(_ i: Int) -> AccessUnit {
        AccessUnit(streamID: 1, trackID: 2, flags: 1, sequence: UInt64(i), dts: Int64(i) * 1024, compositionOffset: 0, data: [UInt8(i & 0xFF)])
    }

    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        /// Frames fed before each video cut: (frames, seconds, the video segment it ends).
        var script: [(frames: Int, cut: Double, sequence: Int)]
        var end: Int
        /// First frame of every segment after the first, cuts that could not be exact, cuts skipped.
        var starts: [Int]
        var misaligned: Int
        var skipped = 0
        var testDescription: String { name }
    }

    // 48 kHz AAC: 1024 ticks a frame, so 2.0 s (96000) falls inside frame 93; frame 94 starts the
    // next segment (4.0 s: frame 188, 6.0 s: 282). Parts hold 15 frames (0.32 s), out once full.
    static let rows: [Row] = [
        Row(name: "video cuts before audio gets there", script: [(10, 2.0, 0), (150, 4.0, 1)], end: 300, starts: [94, 188], misaligned: 0),
        // Audio a few frames ahead (it skips the encode): frames 94...95 are not out yet.
        Row(name: "audio is ahead, the cut is in its unpublished part", script: [(97, 2.0, 0), (94, 4.0, 1)], end: 300, starts: [94, 188], misaligned: 0),
        // 1.5 s is inside the published part 60...74: the cut comes at the first frame not out (90).
        Row(name: "audio is ahead past published parts", script: [(100, 1.5, 0)], end: 300, starts: [90, 231], misaligned: 1),  // 231: 3 s after 90
        Row(name: "no video cuts: audio cuts by duration, after 1.5 targets", script: [], end: 300, starts: [141, 282], misaligned: 0),
        Row(name: "a repeated cut for a segment audio already closed is skipped", script: [(97, 2.0, 0), (0, 1.0, 0), (94, 4.0, 1)], end: 300, starts: [94, 188], misaligned: 0, skipped: 1),
        // Video's first segment took 4 s; audio cut by duration at 141 meanwhile, so it skips the
        // cut ending video segment 0 and cuts with segment 1: segment 2 starts together again.
        Row(name: "after a cut by duration the numbers line up again", script: [(200, 4.0, 0), (80, 6.0, 1)], end: 300, starts: [141, 282], misaligned: 0, skipped: 1),
    ]

    static func run(_ row: Row, chunkTarget: Double) -> (segments: [PackagedSegment], parts: [PackagedPart], segmenter: RenditionSegmenter) {
        var s = RenditionSegmenter(track: LowLatencyPartTests.audio, targetDuration: 2, partTarget: 1.0 / 3.0, chunkTarget: chunkTarget)
        s.followsVideoCuts = true
        var segments: [PackagedSegment] = [], parts: [PackagedPart] = []
        func take(_ o: SegmenterOutput) { parts += o.parts; if let seg = o.segment { segments.append(seg) } }
        var next = 0
        for step in row.script {
            for i in next..<(next + step.frames) { take(s.append(Self.frame(i))) }
            next += step.frames
            take(s.cut(atSeconds: step.cut, endingSegment: step.sequence))
        }
        for i in next..<row.end { take(s.append(Self.frame(i))) }
        take(s.finish())
        return (segments, parts, s)
    }

    @Test(arguments: rows)
    func audioSegmentsStartAtTheVideosCuts(_ row: Row) {
        let (segments, parts, s) = Self.run(row, chunkTarget: 0)
        #expect(segments.dropFirst().map { Int($0.startTime / 1024) } == row.starts, "\(segments.map { $0.startTime / 1024 })")
        #expect(segments.map(\.sequence) == Array(0..<segments.count))
        #expect(s.misalignedCuts == row.misaligned)
        #expect(s.skippedCuts == row.skipped)
        // The timeline has no holes, and every segment is its parts back to back.
        for (a, b) in zip(segments, segments.dropFirst()) { #expect(a.startTime + a.ticks == b.startTime) }
        for seg in segments {
            #expect(seg.bytes == parts.filter { $0.sequence == seg.sequence }.flatMap(\.bytes), "segment \(seg.sequence)")
        }
    }

    /// With 0.1 s chunks, samples already out as chunks cannot move: a cut inside them is late.
    @Test(arguments: rows)
    func chunksAlreadyOutStayInTheirSegment(_ row: Row) {
        let (segments, parts, s) = Self.run(row, chunkTarget: 0.1)
        let plain = Self.run(row, chunkTarget: 0)
        for (a, b) in zip(segments, segments.dropFirst()) { #expect(a.startTime + a.ticks == b.startTime) }
        for seg in segments { #expect(seg.bytes == parts.filter { $0.sequence == seg.sequence }.flatMap(\.bytes)) }
        // A chunk holds 5 frames: a cut is at most that much later than without chunks.
        #expect(segments.count == plain.segments.count)
        for (c, p) in zip(segments.dropFirst(), plain.segments.dropFirst()) {
            #expect(c.startTime >= p.startTime && c.startTime - p.startTime <= 5 * 1024, "\(c.startTime / 1024) vs \(p.startTime / 1024)")
        }
        #expect(s.misalignedCuts >= row.misaligned)
    }

    @Test func audioThatStartsLateTakesTheVideosSegmentNumber() {
        var s = RenditionSegmenter(track: LowLatencyPartTests.audio, targetDuration: 2, partTarget: 1.0 / 3.0, firstSequence: 1)
        s.followsVideoCuts = true
        s.mayRenumberFirstSegment = true
        #expect(s.cut(atSeconds: 2.0, endingSegment: 1).isEmpty, "no audio yet")
        var segments: [PackagedSegment] = []
        for i in 100..<150 { if let seg = s.append(Self.frame(i)).segment { segments.append(seg) } }
        _ = s.cut(atSeconds: 4.0, endingSegment: 2)
        for i in 150..<200 { if let seg = s.append(Self.frame(i)).segment { segments.append(seg) } }
        #expect(segments.map(\.sequence) == [2], "audio from 2.1 s is in video segment 2")
        #expect(segments.first.map { $0.startTime / 1024 } == 100 && segments.first.map { ($0.startTime + $0.ticks) / 1024 } == 188)
        // Without the permission (the rendition already lists segments) the numbers continue.
        var t = RenditionSegmenter(track: LowLatencyPartTests.audio, targetDuration: 2, partTarget: 1.0 / 3.0, firstSequence: 1)
        t.followsVideoCuts = true
        _ = t.cut(atSeconds: 2.0, endingSegment: 1)
        for i in 100..<150 { _ = t.append(Self.frame(i)) }
        #expect(t.cut(atSeconds: 4.0, endingSegment: 2).isEmpty)
        var closed: [Int] = []
        for i in 150..<200 { if let seg = t.append(Self.frame(i)).segment { closed.append(seg.sequence) } }
        #expect(closed == [1], "no one-sample segment for the cut behind audio's start")
        #expect(t.misalignedCuts == 1, "numbers one apart (audio 1, video 2): counted")
    }

    @Test func withoutFollowingAudioCutsByDuration() {
        var s = RenditionSegmenter(track: LowLatencyPartTests.audio, targetDuration: 2, partTarget: 1.0 / 3.0)
        #expect(s.cut(atSeconds: 1.0, endingSegment: 0).isEmpty)
        var starts: [Int64] = []
        for i in 0..<200 { if let seg = s.append(Self.frame(i)).segment { starts.append(seg.startTime) } }
        #expect(starts == [0, 96256], "2 s segments by duration: frames 0...93 and 94...187")
    }
}

@Suite struct PlaylistRenderCacheTests {
    @Test func oneRenderingPerStreamVersion() {
        let cache = PlaylistRenderCache(capacityBytes: 1_000)
        var renders = 0
        func get(_ key: String, _ version: UInt64, _ text: String) -> String {
            String(decoding: cache.playlist(key, version: version) { renders += 1; return text }.bytes, as: UTF8.self)
        }
        #expect(get("t/s|360p||false", 1, "one") == "one")
        #expect(get("t/s|360p||false", 1, "not rendered") == "one", "same version: the first rendering")
        #expect(renders == 1)
        #expect(get("t/s|360p||true", 1, "delta") == "delta", "another key renders")
        #expect(get("t/s|360p||false", 2, "two") == "two", "a new version renders")
        #expect(get("t/s|360p||false", 1, "old") == "old" && get("t/s|360p||false", 2, "x") == "two", "a late older rendering does not replace the newer one")
        #expect(renders == 4)
        #expect(cache.playlist("k", version: 1) { "abc" }.etag == ETag.of(Array("abc".utf8)))
    }

    @Test func startsOverWhenFull() {
        // Bodies gzip cannot shrink, so no gzip is kept: 30 bytes each.
        let cache = PlaylistRenderCache(capacityBytes: 100)
        for i in 0..<5 { _ = cache.playlist("key\(i)", version: 1) { "abcdefghijklmnopqrstuvwxyz0123" } }
        #expect(cache.count == 2, "3 × 30 bytes fit, the 4th starts over, the 5th joins it")
        // A body gzip shrinks weighs its gzip too: 30 bytes of x and their gzip do not fit twice in 100.
        let compressible = String(repeating: "x", count: 30)
        let size = PlaylistRenderCache.Rendered(compressible).size
        #expect(size > 50 && size < 60, "30 bytes and a gzip of about 23: \(size)")
        let zipped = PlaylistRenderCache(capacityBytes: 100)
        for i in 0..<3 { _ = zipped.playlist("key\(i)", version: 1) { compressible } }
        #expect(zipped.count == 1, "each rendering with its gzip starts the cache over")
    }
}
