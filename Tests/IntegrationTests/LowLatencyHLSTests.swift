import Foundation
import Testing

/// The packager as a Low-Latency HLS origin, on a live stream through the whole stack: parts,
/// blocking reload (with and without `_HLS_part`), preload-hinted parts, delta updates, caching
/// headers, a real parser (Python's m3u8) and ffprobe on init + parts.
@Suite(.serialized) struct LowLatencyHLSTests {
    /// A media playlist as it goes over the wire (read off a socket, nothing undone): in gzip to
    /// a client that accepts it (as browsers, AVPlayer, curl and URLSession do), with its own
    /// ETag, `Vary: Accept-Encoding` for caches and a length that is the gzip's; the same text
    /// once undone (by gzip itself); as it is to a client that does not accept it, or refuses it
    /// with q=0; and a revalidation of the gzip's ETag gets 304.
    static func playlistsGoInGzipToClientsThatAcceptIt(stack: StorecastStack, path: String, master: String) async throws {
        let port = try #require(URL(string: stack.playbackBase)?.port)
        // Three reloads of the playlist (a part may come out between them).
        let plain = try #require(await TestEnvironment.streamedGet(port: port, path: path))
        let zipped = try #require(await TestEnvironment.streamedGet(port: port, path: path, headers: ["Accept-Encoding": "gzip, deflate, br"]))
        let refused = try #require(await TestEnvironment.streamedGet(port: port, path: path, headers: ["Accept-Encoding": "br, gzip;q=0"]))
        #expect(plain.status == 200 && zipped.status == 200 && refused.status == 200)
        #expect(plain.headers["content-encoding"] == nil && refused.headers["content-encoding"] == nil, "\(plain.headers) \(refused.headers)")
        #expect(zipped.headers["content-encoding"] == "gzip" && zipped.headers["vary"] == "Accept-Encoding" && plain.headers["vary"] == "Accept-Encoding", "\(zipped.headers)")
        #expect(zipped.headers["content-length"] == "\(zipped.body.count)" && Array(zipped.body.prefix(2)) == [0x1F, 0x8B], "a gzip member: \(zipped.headers)")
        let undone = try Self.gunzip(zipped.body)
        let text = String(decoding: plain.body, as: UTF8.self), unzipped = String(decoding: undone, as: UTF8.self)
        // The playlist may have gained a part between the two requests; compare what both list.
        #expect(unzipped.hasPrefix("#EXTM3U\n") && unzipped.contains("#EXT-X-PART-INF"), "\(unzipped)")
        #expect(text.hasPrefix(String(unzipped.prefix(200))) || unzipped.hasPrefix(String(text.prefix(200))), "the same playlist:\n\(text)\n---\n\(unzipped)")
        print("LowLatencyHLSTests: a media playlist of \(plain.body.count) bytes goes as \(zipped.body.count) in gzip")
        #expect(zipped.body.count < plain.body.count, "gzip makes a playlist smaller (this one is young; a longer one a quarter or less, PlaylistEncodingTests): \(zipped.body.count) of \(plain.body.count)")
        let etag = try #require(zipped.headers["etag"]), plainTag = try #require(plain.headers["etag"])
        #expect(etag != plainTag, "each representation has its own ETag: \(etag)")
        let again = try #require(await TestEnvironment.streamedGet(port: port, path: path, headers: ["Accept-Encoding": "gzip", "If-None-Match": etag]))
        #expect(again.status == 304 || again.headers["etag"] != etag, "the gzip's ETag revalidates: \(again.status) \(again.headers)")
        if again.status == 304 { #expect(again.headers["vary"] == "Accept-Encoding" && again.body.isEmpty, "\(again.headers)") }

        // The multivariant playlist does not change while the show is live: each representation's
        // ETag revalidates only that representation. A client holding one that now asks for the
        // other gets the other in full, never a 304 for bytes it does not have.
        let masterPlain = try #require(await TestEnvironment.streamedGet(port: port, path: master))
        let masterZipped = try #require(await TestEnvironment.streamedGet(port: port, path: master, headers: ["Accept-Encoding": "gzip"]))
        let (plainMasterTag, zippedMasterTag) = (try #require(masterPlain.headers["etag"]), try #require(masterZipped.headers["etag"]))
        #expect(masterZipped.headers["content-encoding"] == "gzip" && plainMasterTag != zippedMasterTag, "\(masterZipped.headers)")
        #expect(masterZipped.headers["content-length"] == "\(masterZipped.body.count)" && masterPlain.headers["content-length"] == "\(masterPlain.body.count)")
        #expect(try Self.gunzip(masterZipped.body) == masterPlain.body, "the gzip of the same multivariant playlist")
        let rows: [(encoding: String?, tag: String, status: Int, gzip: Bool)] = [
            ("gzip", zippedMasterTag, 304, true), (nil, plainMasterTag, 304, false),
            ("gzip", plainMasterTag, 200, true), (nil, zippedMasterTag, 200, false), ("gzip", "W/" + zippedMasterTag, 304, true),
        ]
        for row in rows {
            var headers = ["If-None-Match": row.tag]
            if let encoding = row.encoding { headers["Accept-Encoding"] = encoding }
            let answer = try #require(await TestEnvironment.streamedGet(port: port, path: master, headers: headers))
            #expect(answer.status == row.status && answer.headers["etag"] == (row.gzip ? zippedMasterTag : plainMasterTag), "\(row): \(answer.status) \(answer.headers)")
            if row.status == 200 { #expect(answer.body == (row.gzip ? masterZipped.body : masterPlain.body), "\(row): the whole playlist") }
        }
    }

    /// `bytes` undone by gzip (the command), as a client would.
    static func gunzip(_ bytes: [UInt8]) throws -> [UInt8] {
        let process = Process(), input = Pipe(), output = Pipe()
        process.executableURL = URL(fileURLWithPath: "/bin/gzip")
        process.arguments = ["-dc"]
        (process.standardInput, process.standardOutput) = (input, output)
        try process.run()
        input.fileHandleForWriting.write(Data(bytes))
        try input.fileHandleForWriting.close()
        let out = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "gzip -dc took the body")
        return Array(out)
    }

    static func text(_ r: (status: Int, headers: [String: String], body: [UInt8], seconds: Double)?) -> String {
        String(decoding: r?.body ?? [], as: UTF8.self)
    }

    /// (msn, part) of EXT-X-PRELOAD-HINT, and the last complete segment.
    static func edge(_ playlist: String) -> (hint: (Int, Int)?, lastComplete: Int?) {
        let hint = playlist.firstMatch(of: /#EXT-X-PRELOAD-HINT:TYPE=PART,URI="part-(\d+)\.(\d+)\.m4s"/).map { (Int($0.1)!, Int($0.2)!) }
        let complete = playlist.matches(of: /\nseg-(\d+)\.m4s/).last.map { Int($0.1)! }
        return (hint, complete)
    }

    /// Parses `text` with Python's m3u8 (as `p`) and runs `body`, which prints one JSON object.
    static func m3u8(_ text: String, named name: String, in directory: URL, _ body: String) async throws -> [String: Any] {
        let saved = directory.appendingPathComponent(name)
        try Data(text.utf8).write(to: saved)
        let script = "import json, m3u8, sys\np = m3u8.load(sys.argv[1])\n" + body
        let (status, output) = try await ServiceProcess.run(try TestEnvironment.testTool("venv/bin/python"), ["-c", script, saved.path])
        #expect(status == 0, "m3u8 failed on \(name): \(output)")
        return try #require(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any], "\(output)")
    }

    @Test func lowLatencyOriginOnALiveStream() async throws {
        let stack = try StorecastStack()
        let key = try await stack.provisionStream(tenant: "shop", stream: "ll")
        try stack.start()
        try await stack.waitUntilReady()
        let publisher = try EndToEndTests.publisher(url: stack.rtmpURL(key: key), seconds: 40, logDirectory: stack.logDirectory)
        defer { publisher.stop(grace: 1) }
        let stream = "\(stack.playbackBase)/live/shop/ll"
        // Announced, with parts but no whole segment yet: master.m3u8 is held until the first
        // segments are ready instead of answering 404.
        let starting = await StorecastStack.eventually(timeout: .seconds(25)) {
            guard let r = await TestEnvironment.httpExchange("\(stream)/360p/index.m3u8"), r.status == 200 else { return false }
            return !Self.text(r).contains("#EXTINF")
        }
        #expect(starting, "never saw the rendition before its first segment")
        let early = try #require(await TestEnvironment.httpExchange("\(stream)/master.m3u8", headers: ["Origin": "https://shop.example"]))
        #expect(early.status == 200 && Self.text(early).contains("#EXT-X-STREAM-INF"), "\(early.status): \(Self.text(early))")
        // CORS on the actual answer, with the ETag readable by a page on another origin.
        #expect(early.headers["access-control-allow-origin"] == "*" && early.headers["access-control-expose-headers"]?.contains("ETag") == true, "\(early.headers)")
        #expect(early.headers["vary"]?.lowercased().contains("origin") != true, "the answer never depends on Origin: \(early.headers)")
        // The same CORS headers without an Origin (the native player, a CDN's own fetch), since
        // a cache hands that answer to the next cross-origin page.
        let plainFetch = try #require(await TestEnvironment.httpExchange("\(stream)/master.m3u8"))
        #expect(plainFetch.headers["access-control-allow-origin"] == "*" && plainFetch.headers["access-control-expose-headers"]?.contains("ETag") == true, "\(plainFetch.headers)")
        // Renditions sit under the package's generation, so media URLs never name other bytes.
        let generation = try #require(Self.text(early).firstMatch(of: /\n([0-9a-z]+)\/360p\/index\.m3u8\n/).map { String($0.1) }, "\(Self.text(early))")
        #expect(Self.text(early).contains("URI=\"\(generation)/audio/index.m3u8\""), "\(Self.text(early))")
        let base = "\(stream)/\(generation)/360p"
        let ready = await StorecastStack.eventually(timeout: .seconds(25)) {
            Self.edge(Self.text(await TestEnvironment.httpExchange("\(base)/index.m3u8"))).lastComplete != nil
        }
        #expect(ready, "360p never got a segment:\n\(stack.logs())")

        // Media sequence numbers start at 1: hls.js only blocks on reloads after a non-zero one.
        let first = Self.text(await TestEnvironment.httpExchange("\(base)/index.m3u8"))
        #expect(first.contains("#EXT-X-MEDIA-SEQUENCE:1\n") && first.contains("\nseg-1.m4s"), "\(first)")
        // A plain reload: LL tags, an ETag, no-cache; the same ETag gets 304.
        let plain = try #require(await TestEnvironment.httpExchange("\(base)/index.m3u8"))
        let playlist = Self.text(plain)
        #expect(playlist.contains("#EXT-X-PART-INF:PART-TARGET=0.200"), "\(playlist)")
        #expect(playlist.contains("#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,CAN-SKIP-UNTIL=12.000,PART-HOLD-BACK=0.600"))
        #expect(playlist.contains("#EXT-X-RENDITION-REPORT:URI=\"../480p/index.m3u8\""))
        #expect(plain.headers["cache-control"] == "no-cache")
        let etag = try #require(plain.headers["etag"])
        let revalidated = await TestEnvironment.httpExchange("\(base)/index.m3u8", headers: ["If-None-Match": etag])
        #expect(revalidated?.status == 304 || revalidated.map { Self.text($0) != playlist } == true, "unchanged playlist answers 304")

        try await Self.playlistsGoInGzipToClientsThatAcceptIt(stack: stack, path: "\(URL(string: base)!.path)/index.m3u8", master: "\(URL(string: stream)!.path)/master.m3u8")

        // Blocking reload for the hinted part: held until it exists, then listed; no-store.
        let (hint, lastComplete) = Self.edge(playlist)
        let (msn, part) = try #require(hint)
        let blocked = try #require(await TestEnvironment.httpExchange("\(base)/index.m3u8?_HLS_msn=\(msn)&_HLS_part=\(part)"))
        #expect(blocked.status == 200)
        #expect(Self.text(blocked).contains("URI=\"part-\(msn).\(part).m4s\""), "\(Self.text(blocked))")
        #expect(blocked.headers["cache-control"] == "no-store")
        // The preload-hinted part itself, requested before it exists, arrives when it is done.
        let next = Self.edge(Self.text(blocked)).hint!
        let hinted = try #require(await TestEnvironment.httpExchange("\(base)/part-\(next.0).\(next.1).m4s"))
        #expect(hinted.status == 200 && hinted.headers["cache-control"] == "max-age=31536000, immutable")
        #expect(hinted.body.count > 8 && Array(hinted.body[4..<8]) == Array("moof".utf8))
        // The same part directly under the stream (no generation): the same bytes, revalidated
        // (the next show reuses the name), 304 for its ETag; a generation not live is 404.
        let direct = try #require(await TestEnvironment.httpExchange("\(stream)/360p/part-\(next.0).\(next.1).m4s"))
        #expect(direct.status == 200 && direct.body == hinted.body && direct.headers["cache-control"] == "no-cache", "\(direct.headers)")
        let mediaTag = try #require(direct.headers["etag"])
        #expect(mediaTag == hinted.headers["etag"] && mediaTag.contains(generation), "\(mediaTag)")
        #expect(await TestEnvironment.httpExchange("\(base)/part-\(next.0).\(next.1).m4s", headers: ["If-None-Match": mediaTag])?.status == 304)
        let stale = try #require(await TestEnvironment.httpExchange("\(stream)/zzzz/360p/part-\(next.0).\(next.1).m4s"))
        #expect(stale.status == 404 && Self.text(stale).contains("reload master.m3u8"), "\(Self.text(stale))")
        #expect(await TestEnvironment.httpExchange("\(stream)/zzzz/360p/index.m3u8")?.status == 404)
        try await Self.hintedPartIsStreamedAsItIsWritten(stack: stack, base: base)

        // Safari's form: _HLS_msn alone waits for that whole segment.
        let want = (lastComplete ?? 0) + 1
        let safari = try #require(await TestEnvironment.httpExchange("\(base)/index.m3u8?_HLS_msn=\(want)"))
        #expect(safari.status == 200)
        #expect((Self.edge(Self.text(safari)).lastComplete ?? -1) >= want, "\(Self.text(safari))")

        // Refusals are immediate 400s with a JSON body. The part far ahead names a segment at or
        // past the live edge of a fresh reload (an older segment would answer: later parts exist).
        let edgeNow = try #require(Self.edge(Self.text(await TestEnvironment.httpExchange("\(base)/index.m3u8"))).hint?.0)
        for query in ["_HLS_msn=\(want + 50)", "_HLS_part=1", "_HLS_msn=\(edgeNow + 1)&_HLS_part=400", "_HLS_msn=x"] {
            let r = try #require(await TestEnvironment.httpExchange("\(base)/index.m3u8?\(query)"))
            #expect(r.status == 400, "\(query)")
            #expect(Self.text(r).contains("\"message\""), "\(query): \(Self.text(r))")
        }

        // Python's m3u8 parses the live playlist: parts, hint, reports, server control.
        let saved = stack.logDirectory.appendingPathComponent("ll.m3u8")
        try Data(Self.text(blocked).utf8).write(to: saved)
        let script = """
            import json, m3u8, sys
            p = m3u8.load(sys.argv[1])
            parts = [pt for s in p.segments for pt in s.parts]
            print(json.dumps({"segments": len(p.segments), "parts": len(parts),
              "part_target": p.part_inf.part_target, "hold": p.server_control.part_hold_back, "block": p.server_control.can_block_reload,
              "hint": p.preload_hint.uri if p.preload_hint else None, "reports": len(p.rendition_reports),
              "independent": sum(1 for pt in parts if pt.independent == "YES"), "max_part": max(pt.duration for pt in parts)}))
            """
        let (status, output) = try await ServiceProcess.run(try TestEnvironment.testTool("venv/bin/python"), ["-c", script, saved.path])
        #expect(status == 0, "m3u8 failed: \(output)")
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any], "\(output)")
        #expect((parsed["part_target"] as? Double) == 0.2)
        #expect((parsed["hold"] as? Double) ?? 0 >= 0.6 - 1e-9, "PART-HOLD-BACK at least three PART-TARGETs as written: \(parsed)")
        #expect((parsed["block"] as? String) == "YES")
        #expect((parsed["max_part"] as? Double) ?? 1 <= 0.2, "\(parsed)")
        #expect((parsed["independent"] as? Int) ?? 0 >= 1)
        #expect((parsed["reports"] as? Int) ?? 0 >= 1)
        #expect(parsed["hint"] is String)

        // ffprobe decodes init + every part of one complete segment, and init + its first part
        // (the newest complete one: the stream's first is short, ended by the fast-start keyframe).
        let listed = Self.text(blocked)
        let complete = try #require(listed.matches(of: /#EXT-X-PART:[^\n]*URI="part-(\d+)\.(\d+)\.m4s"[^\n]*\n(?:#EXT-X-PART:[^\n]*\n)*#EXTINF/).last.map { Int($0.1)! })
        let parts = listed.matches(of: /URI="part-(\d+)\.(\d+)\.m4s"/).filter { Int($0.1)! == complete }.map { String($0.0.dropFirst(5).dropLast(1)) }
        let initData = try #require(await TestEnvironment.httpExchange("\(base)/init.mp4")).body
        var joined = initData
        for name in parts { joined += try #require(await TestEnvironment.httpExchange("\(base)/\(name)")).body }
        let segment = try #require(await TestEnvironment.httpExchange("\(base)/seg-\(complete).m4s")).body
        #expect(joined.count - initData.count == segment.count, "the parts are the segment")
        let partsFile = stack.logDirectory.appendingPathComponent("parts.mp4")
        try Data(joined).write(to: partsFile)
        let frames = try await EndToEndTests.probe(partsFile, ["-count_frames", "-select_streams", "v:0", "-show_entries", "stream=nb_read_frames,width,height", "-of", "csv=p=0"])
        #expect(frames.trimmingCharacters(in: .whitespacesAndNewlines).hasPrefix("640,360,"), "\(frames)")
        // Every frame of the segment (30 fps over its EXTINF; the stream's first one is short:
        // 0.4 s, the transcoder's fast start).
        let extinf = try #require(listed.matches(of: /#EXTINF:([\d.]+),\nseg-(\d+)\.m4s/).first { Int($0.2)! == complete }.map { Double($0.1)! })
        #expect((Int(frames.split(separator: ",").last?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? 0) >= Int((extinf * 30).rounded()) - 1 && extinf >= 0.35, "\(frames) frames over \(parts.count) parts, \(extinf) s")
        let firstPart = stack.logDirectory.appendingPathComponent("part0.mp4")
        try Data(initData + (try #require(await TestEnvironment.httpExchange("\(base)/\(parts[0])")).body)).write(to: firstPart)
        let firstFrames = try await EndToEndTests.probe(firstPart, ["-count_frames", "-select_streams", "v:0", "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0"])
        #expect((Int(firstFrames.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) >= 5, "an INDEPENDENT part decodes alone: \(firstFrames)")

        // A delta update once the window is longer than the skip boundary (12 s).
        let skipped = await StorecastStack.eventually(timeout: .seconds(20)) {
            Self.text(await TestEnvironment.httpExchange("\(base)/index.m3u8?_HLS_skip=YES")).contains("#EXT-X-SKIP:SKIPPED-SEGMENTS=")
        }
        let delta = Self.text(await TestEnvironment.httpExchange("\(base)/index.m3u8?_HLS_skip=YES"))
        #expect(skipped, "no delta update: \(delta)")
        #expect(delta.contains("#EXT-X-VERSION:9"))

        // Python's m3u8 parses the multivariant playlist and the delta update too.
        let parsedMaster = try await Self.m3u8(Self.text(early), named: "master.m3u8", in: stack.logDirectory, """
            print(json.dumps({"variants": [{"uri": v.uri, "bandwidth": v.stream_info.bandwidth, "average": v.stream_info.average_bandwidth,
                "resolution": list(v.stream_info.resolution or []), "fps": v.stream_info.frame_rate, "codecs": v.stream_info.codecs, "audio": v.stream_info.audio} for v in p.playlists],
              "media": [{"type": m.type, "group": m.group_id, "uri": m.uri} for m in p.media]}))
            """)
        let variants = try #require(parsedMaster["variants"] as? [[String: Any]], "\(parsedMaster)")
        #expect(variants.count == 2, "480p and 360p: \(variants)")
        for v in variants {
            #expect((v["uri"] as? String)?.hasPrefix("\(generation)/") == true && (v["average"] as? Int ?? 0) > 0 && (v["bandwidth"] as? Int ?? 0) >= (v["average"] as? Int ?? .max), "\(v)")
            #expect((v["fps"] as? Double) == 30 && (v["audio"] as? String) == "audio" && (v["codecs"] as? String)?.hasPrefix("avc1.") == true, "\(v)")
        }
        #expect(variants.compactMap { ($0["resolution"] as? [Int])?.last } == [480, 360], "best first: \(variants)")
        #expect((parsedMaster["media"] as? [[String: Any]])?.map { "\($0["type"] ?? "")/\($0["group"] ?? "")/\($0["uri"] ?? "")" } == ["AUDIO/audio/\(generation)/audio/index.m3u8"], "\(parsedMaster)")
        let parsedDelta = try await Self.m3u8(delta, named: "delta.m3u8", in: stack.logDirectory, """
            print(json.dumps({"msn": p.media_sequence, "skipped": p.skip.skipped_segments if p.skip else 0, "first": p.segments[0].uri, "version": p.version}))
            """)
        let (msnAtStart, skippedCount) = (parsedDelta["msn"] as? Int ?? -1, parsedDelta["skipped"] as? Int ?? 0)
        #expect(skippedCount > 0 && parsedDelta["first"] as? String == "seg-\(msnAtStart + skippedCount).m4s", "the first listed segment follows the skipped ones: \(parsedDelta)")

        // Audio cuts where the video does: segment N of both starts at the same stream time
        // (within one 21 ms AAC frame), after 12+ s of 2 s video segments and ~2.02 s AAC ones.
        let starts = { (rendition: String) async -> [Int: Double] in
            let text = Self.text(await TestEnvironment.httpExchange("\(stack.playbackBase)/live/shop/ll/\(rendition)/index.m3u8"))
            var out: [Int: Double] = [:]
            for m in text.matches(of: /#EXT-X-PROGRAM-DATE-TIME:(\S+)\n(?:#EXT-X-PART:[^\n]*\n)*#EXTINF:[^\n]*\nseg-(\d+)\.m4s/) {
                let formatter = ISO8601DateFormatter()
                formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
                if let date = formatter.date(from: String(m.1)) { out[Int(m.2)!] = date.timeIntervalSince1970 }
            }
            return out
        }
        let video = await starts("360p"), audio = await starts("audio")
        let common = Set(video.keys).intersection(audio.keys).sorted()
        #expect(common.count >= 5, "video \(video.keys.sorted()), audio \(audio.keys.sorted())")
        for n in common { #expect(abs(video[n]! - audio[n]!) <= 0.025, "segment \(n): video starts \(video[n]!), audio \(audio[n]!)") }
        _ = await stack.stop()
    }
}

extension LowLatencyHLSTests {
    /// The preload-hinted part, asked for as it starts: its first CMAF chunks arrive before the
    /// part is complete (the moment a blocking reload for it returns), chunked, and the streamed
    /// bytes are the part as later served whole. A request that happens to start late gets the
    /// whole part at once, so up to three parts are tried.
    static func hintedPartIsStreamedAsItIsWritten(stack: StorecastStack, base: String) async throws {
        let port = try #require(URL(string: stack.playbackBase)?.port)
        let path = try #require(URL(string: base)?.path)
        var streamedEarly = false
        for _ in 0..<3 where !streamedEarly {
            // A blocking reload for the newest part returns as it is written: the hint is just starting.
            let now = Self.text(await TestEnvironment.httpExchange("\(base)/index.m3u8"))
            let (m, i) = try #require(Self.edge(now).hint)
            let fresh = Self.text(await TestEnvironment.httpExchange("\(base)/index.m3u8?_HLS_msn=\(m)&_HLS_part=\(i)"))
            let (hm, hi) = try #require(Self.edge(fresh).hint)
            async let streamed = TestEnvironment.streamedGet(port: port, path: "\(path)/part-\(hm).\(hi).m4s")
            _ = await TestEnvironment.httpExchange("\(base)/index.m3u8?_HLS_msn=\(hm)&_HLS_part=\(hi)")
            let complete = ContinuousClock.now
            let response = try #require(await streamed)
            #expect(response.status == 200)
            let whole = try #require(await TestEnvironment.httpExchange("\(base)/part-\(hm).\(hi).m4s")).body
            #expect(response.body == whole, "streamed \(response.body.count) bytes, the part has \(whole.count)")
            // One CMAF chunk per 0.1 s of the part (a part cut short by a keyframe may be one).
            let moofs = whole.indices.dropLast(4).filter { Array(whole[$0..<($0 + 4)]) == Array("moof".utf8) }.count
            let listed = Self.text(await TestEnvironment.httpExchange("\(base)/index.m3u8"))
            let duration = try #require(listed.firstMatch(of: try Regex("#EXT-X-PART:DURATION=([0-9.]+),URI=\"part-\(hm)\\.\(hi)\\.m4s\"")).flatMap { Double($0.output[1].substring ?? "") }, "\(listed)")
            #expect(moofs >= max(1, Int((duration + 0.001) / 0.1)), "a \(duration) s part of 0.1 s CMAF chunks: \(moofs) moof")
            if response.headers["transfer-encoding"] == "chunked", let first = response.bodyArrivals.first, first < complete {
                streamedEarly = true
            }
        }
        #expect(streamedEarly, "no hinted part's bytes arrived before the part was complete")
    }
}

/// Single-track streams through the whole stack: a video-only publisher (no audio group) and an
/// audio-only one (the audio rendition is the only variant) both become playable LL-HLS.
@Suite(.serialized) struct SingleTrackStreamTests {
    static func publisher(url: String, video: Bool, logDirectory: URL) throws -> ServiceProcess {
        let input = video ? ["-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30"] : ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100"]
        let codec = video ? ["-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-g", "60", "-an"] : ["-c:a", "aac", "-b:a", "96k", "-vn"]
        return try ServiceProcess(name: "ffmpeg-\(video ? "video" : "audio")-only", executable: try TestEnvironment.which("ffmpeg"),
                                  arguments: ["-hide_banner", "-loglevel", "error", "-re"] + input + ["-t", "20"] + codec + ["-f", "flv", url], logDirectory: logDirectory)
    }

    @Test(arguments: [true, false])
    func aSingleTrackStreamPlays(video: Bool) async throws {
        let stack = try StorecastStack()
        let name = video ? "video-only" : "audio-only"
        let key = try await stack.provisionStream(tenant: "shop", stream: name)
        try stack.start()
        try await stack.waitUntilReady()
        let publisher = try Self.publisher(url: stack.rtmpURL(key: key), video: video, logDirectory: stack.logDirectory)
        defer { publisher.stop(grace: 1) }
        let base = "\(stack.playbackBase)/live/shop/\(name)"
        var master = ""
        let ready = await StorecastStack.eventually(timeout: .seconds(25)) {
            guard let r = await TestEnvironment.httpGet("\(base)/master.m3u8"), r.status == 200 else { return false }
            master = String(decoding: r.body, as: UTF8.self)
            return true
        }
        #expect(ready, "\(name) becomes playable:\n\(stack.logs())")
        let variants = master.split(separator: "\n").filter { !$0.hasPrefix("#") }.map { EndToEndTests.withoutGeneration(String($0)) }
        if video {
            #expect(!master.contains("TYPE=AUDIO") && !master.contains("mp4a"), "no audio group: \(master)")
            #expect(variants.contains("360p/index.m3u8"), "\(master)")
        } else {
            #expect(variants == ["audio/index.m3u8"] && master.contains("CODECS=\"mp4a.40.2\""), "the audio rendition is the variant: \(master)")
        }
        // Its media decodes from init + parts, as an LL player fetches it.
        let rendition = variants[0].split(separator: "/").first.map(String.init) ?? ""
        let playlist = await TestEnvironment.httpText("\(base)/\(rendition)/index.m3u8")
        let parts = playlist.matches(of: /URI="(part-\d+\.\d+\.m4s)"/).map { String($0.1) }
        #expect(parts.count >= 3, "\(playlist)")
        var bytes = try #require(await TestEnvironment.httpGet("\(base)/\(rendition)/init.mp4")).body
        for p in parts.prefix(6) { bytes += try #require(await TestEnvironment.httpGet("\(base)/\(rendition)/\(p)")).body }
        let file = stack.logDirectory.appendingPathComponent("\(name).mp4")
        try Data(bytes).write(to: file)
        let probe = try await EndToEndTests.probe(file, ["-show_entries", "stream=codec_type", "-of", "csv=p=0"])
        #expect(probe.trimmingCharacters(in: .whitespacesAndNewlines) == (video ? "video" : "audio"), "\(probe)")
        _ = await stack.stop()
    }
}
