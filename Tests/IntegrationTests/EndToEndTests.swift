import Foundation
import PostgresClient
import Testing

/// The whole path on real parts: PostgreSQL, the five services over ZeroMQ, libavcodec/x264,
/// and ffmpeg as the RTMP publisher; outputs checked with ffprobe.
@Suite(.serialized) struct EndToEndTests {
    /// ffmpeg publishing testsrc2 at 854x480, 30 fps, H.264 + AAC, in real time.
    /// ffmpeg publishing testsrc2 with a 2 s GOP; `bFrames`: x264 veryfast with two B-frames
    /// (pictures out of decode order, as OBS's default settings send) instead of ultrafast zerolatency.
    /// `videoBitrate` (kbit/s) holds x264 to that rate (its VBV); nil leaves x264's default CRF.
    static func publisher(url: String, seconds: Int, logDirectory: URL, bFrames: Bool = false, size: String = "854x480", name: String = "ffmpeg-publisher", videoBitrate: Int? = nil) throws -> ServiceProcess {
        let x264 = (bFrames ? ["-preset", "veryfast", "-bf", "2"] : ["-preset", "ultrafast", "-tune", "zerolatency"])
            + (videoBitrate.map { ["-b:v", "\($0)k", "-maxrate", "\($0)k", "-bufsize", "\($0 / 2)k", "-x264-params", "nal-hrd=cbr"] } ?? [])
        return try ServiceProcess(name: name, executable: try TestEnvironment.which("ffmpeg"), arguments: [
            "-hide_banner", "-loglevel", "error", "-re",
            "-f", "lavfi", "-i", "testsrc2=size=\(size):rate=30",
            "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100",
            "-t", "\(seconds)", "-c:v", "libx264"] + x264 + ["-g", "60",
            "-c:a", "aac", "-b:a", "96k", "-f", "flv", url,
        ], logDirectory: logDirectory)
    }

    static func variants(_ master: String) -> [(resolution: String, uri: String)] {
        let lines = master.split(separator: "\n").map(String.init)
        return lines.indices.compactMap { i in
            guard lines[i].hasPrefix("#EXT-X-STREAM-INF:"), i + 1 < lines.count,
                  let res = lines[i].firstMatch(of: /RESOLUTION=(\d+x\d+)/)?.1 else { return nil }
            return (String(res), withoutGeneration(lines[i + 1]))
        }
    }

    /// A multivariant playlist's rendition URI without the generation directory it sits under
    /// (`mhx2k3j1/360p/index.m3u8` → `360p/index.m3u8`).
    static func withoutGeneration(_ uri: String) -> String {
        let parts = uri.split(separator: "/")
        return parts.count == 3 ? parts.dropFirst().joined(separator: "/") : uri
    }

    /// Downloads init + one media segment of a rendition into a file ffprobe can read.
    static func fetchSample(base: String, playlistURI: String, segmentIndex: Int, into dir: URL) async throws -> URL {
        let renditionBase = base + "/" + playlistURI.split(separator: "/").dropLast().joined(separator: "/")
        let playlist = try #require(await TestEnvironment.httpGet(base + "/" + playlistURI))
        let text = String(decoding: playlist.body, as: UTF8.self)
        // Each segment with the EXT-X-MAP in effect where it is listed.
        var map = "init.mp4"
        var segments: [(uri: Substring, map: String)] = []
        for line in text.split(separator: "\n") {
            if let m = line.firstMatch(of: /#EXT-X-MAP:URI="([^"]+)"/) { map = String(m.1) }
            if line.hasSuffix(".m4s") { segments.append((line, map)) }
        }
        #expect(segments.count > segmentIndex, "playlist has segments: \(text)")
        let chosen = segments[min(segmentIndex, segments.count - 1)]
        let initData = try #require(await TestEnvironment.httpGet(renditionBase + "/" + chosen.map))
        let segment = try #require(await TestEnvironment.httpGet(renditionBase + "/" + chosen.uri))
        #expect(initData.status == 200 && segment.status == 200)
        let file = dir.appendingPathComponent("\(UUID().uuidString.prefix(6)).mp4")
        try Data(initData.body + segment.body).write(to: file)
        return file
    }

    static func probe(_ file: URL, _ arguments: [String]) async throws -> String {
        let (status, output) = try await ServiceProcess.run(try TestEnvironment.which("ffprobe"), ["-v", "error"] + arguments + [file.path])
        #expect(status == 0, "ffprobe failed: \(output)")
        return output
    }

    @Test func ffmpegPublishBecomesAnABRLadderThatFFprobeDecodes() async throws {
        let stack = try StorecastStack()
        let key = try await stack.provisionStream(tenant: "shop", stream: "launch")
        try stack.start()
        try await stack.waitUntilReady()
        let publisher = try Self.publisher(url: stack.rtmpURL(key: key), seconds: 10, logDirectory: stack.logDirectory)

        // Within 15 s of the publish a multivariant playlist lists at least two variants.
        var master = ""
        let appeared = await StorecastStack.eventually(timeout: .seconds(15)) {
            guard let r = await TestEnvironment.httpGet("\(stack.playbackBase)/live/shop/launch/master.m3u8"), r.status == 200 else { return false }
            master = String(decoding: r.body, as: UTF8.self)
            return Self.variants(master).count >= 2
        }
        #expect(appeared, "no multivariant playlist with two variants within 15 s:\n\(master)\n\(stack.logs())")
        let variants = Self.variants(master)
        #expect(variants.map(\.resolution) == ["854x480", "640x360"])
        // ultrafast makes x264 write constrained baseline: avc1.42C0xx.
        #expect(master.firstMatch(of: /CODECS="avc1\.42C01F,mp4a\.40\.2"/) != nil)
        #expect(master.firstMatch(of: /CODECS="avc1\.42C01E,mp4a\.40\.2"/) != nil)
        #expect(master.contains("BANDWIDTH="))
        #expect(master.contains("TYPE=AUDIO"))

        // Wait until each rendition has two segments, then decode the second of each.
        _ = await StorecastStack.eventually(timeout: .seconds(10)) {
            for v in variants {
                guard let p = await TestEnvironment.httpGet("\(stack.playbackBase)/live/shop/launch/\(v.uri)") else { return false }
                if String(decoding: p.body, as: UTF8.self).split(separator: "\n").filter({ $0.hasSuffix(".m4s") }).count < 2 { return false }
            }
            return true
        }
        var keyframeTimes: [String] = []
        for v in variants {
            let file = try await Self.fetchSample(base: "\(stack.playbackBase)/live/shop/launch", playlistURI: v.uri, segmentIndex: 1, into: stack.logDirectory)
            let size = try await Self.probe(file, ["-select_streams", "v:0", "-show_entries", "stream=codec_name,width,height", "-of", "csv=p=0"])
            let parts = v.resolution.split(separator: "x")
            #expect(size.trimmingCharacters(in: .whitespacesAndNewlines) == "h264,\(parts[0]),\(parts[1])")
            let frames = try await EndToEndTests.probe(file, ["-select_streams", "v:0", "-show_entries", "frame=key_frame,pts_time", "-of", "csv=p=0"])
            let lines = frames.split(separator: "\n")
            #expect(lines.count >= 30, "a 2 s segment at 30 fps")
            #expect(lines.first?.hasPrefix("1,") == true, "segment starts with a keyframe")
            keyframeTimes.append(lines.filter { $0.hasPrefix("1,") }.joined(separator: ";"))
        }
        #expect(Set(keyframeTimes).count == 1, "keyframes at the same timestamps in every rendition: \(keyframeTimes)")

        // EXT-X-PROGRAM-DATE-TIME on every segment: near now, and advancing by each EXTINF.
        let media = await TestEnvironment.httpText("\(stack.playbackBase)/live/shop/launch/\(variants[0].uri)")
        let parser = ISO8601DateFormatter()
        parser.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let dates = media.split(separator: "\n").filter { $0.hasPrefix("#EXT-X-PROGRAM-DATE-TIME:") }.compactMap { parser.date(from: String($0.dropFirst(25))) }
        let durations = media.split(separator: "\n").filter { $0.hasPrefix("#EXTINF:") }.compactMap { Double($0.dropFirst(8).dropLast()) }
        #expect(dates.count == durations.count && dates.count >= 2, "\(media)")
        #expect(dates.first.map { abs($0.timeIntervalSinceNow) < 30 } == true, "dates near now: \(dates)")
        for i in 0..<(min(dates.count, durations.count) - 1) {
            #expect(abs(dates[i + 1].timeIntervalSince(dates[i]) - durations[i]) < 0.002, "segment \(i): \(dates[i]) + \(durations[i]) s ≠ \(dates[i + 1])")
        }
        let audioFile = try await Self.fetchSample(base: "\(stack.playbackBase)/live/shop/launch", playlistURI: "audio/index.m3u8", segmentIndex: 0, into: stack.logDirectory)
        let audio = try await Self.probe(audioFile, ["-show_entries", "stream=codec_name,sample_rate", "-of", "csv=p=0"])
        #expect(audio.trimmingCharacters(in: .whitespacesAndNewlines) == "aac,44100")

        // The feed's preview still: a JPEG of the source, short side 360.
        let still = try #require(await TestEnvironment.httpGet("\(stack.playbackBase)/live/shop/launch/thumbnail.jpg"))
        #expect(still.status == 200 && still.body.starts(with: [0xFF, 0xD8]), "a JPEG preview is served")
        let stillFile = stack.logDirectory.appendingPathComponent("thumbnail.jpg")
        try Data(still.body).write(to: stillFile)
        let stillProbe = try await Self.probe(stillFile, ["-show_entries", "stream=codec_name,width,height", "-of", "csv=p=0"])
        #expect(stillProbe.trimmingCharacters(in: .whitespacesAndNewlines) == "mjpeg,640,360")
        // The control API sends callers to it (URLSession follows the redirect).
        let viaAPI = try #require(await TestEnvironment.httpGet("http://127.0.0.1:\(stack.apiPort)/v1/tenants/shop/streams/launch/thumbnail"))
        #expect(viaAPI.status == 200 && viaAPI.body.starts(with: [0xFF, 0xD8]), "the API leads to the JPEG")
        let unknown = try #require(await TestEnvironment.httpGet("http://127.0.0.1:\(stack.apiPort)/v1/tenants/shop/streams/nope/thumbnail"))
        #expect(unknown.status == 404)

        // Every process reports to the collector.
        let metrics = try #require(await TestEnvironment.httpGet("http://127.0.0.1:\(stack.metricsPort)/metrics"))
        let text = String(decoding: metrics.body, as: UTF8.self)
        for service in ["ingest", "transcoder", "packager", "api"] {
            #expect(text.contains("storecast_up{service=\"\(service)\""), "\(service) heartbeat missing")
        }
        let forwarded = text.split(separator: "\n").first { $0.hasPrefix("storecast_ingest_units_forwarded_total{") }
        #expect(forwarded.flatMap { Double($0.split(separator: " ").last ?? "") }.map { $0 > 100 } == true, "units counted: \(forwarded ?? "none")")

        #expect(await publisher.wait(timeout: 30) == 0, "ffmpeg publisher failed: \(publisher.log)")
        // 10 s of stream: a still at 0 s and one at 5 s.
        var stills = 0.0
        _ = await StorecastStack.eventually(timeout: .seconds(5)) {
            let text = await TestEnvironment.httpText("http://127.0.0.1:\(stack.metricsPort)/metrics")
            stills = text.split(separator: "\n").first { $0.hasPrefix("storecast_packager_thumbnails_total{") }.flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0
            return stills >= 2
        }
        #expect(stills == 2, "one still every 5 s of stream time: \(stills)")
        let db = PostgresExecutor(conninfo: stack.database)
        defer { db.shutdown() }
        let closed = try await StorecastStack.eventually(timeout: .seconds(5)) {
            let rows = try await db.execute("SELECT end_reason, width, height, client FROM sessions ORDER BY id DESC LIMIT 1")
            return rows.value(0, "end_reason") != nil
        }
        #expect(closed, "session row closed after the publisher left")
        let session = try await db.execute("SELECT end_reason, width, height, client FROM sessions ORDER BY id DESC LIMIT 1")
        #expect(session.value(0, "width") == "854" && session.value(0, "height") == "480")
        #expect(session.value(0, "client")?.contains("Lavf") == true)
        let rate = try await db.execute("SELECT frame_rate FROM sessions ORDER BY id DESC LIMIT 1")
        #expect(rate.value(0, "frame_rate") == "30", "onMetaData framerate recorded")

        let statuses = await stack.stop()
        #expect(statuses.values.allSatisfy { $0 == 0 }, "graceful SIGTERM exit: \(statuses)")
    }

    /// The finished audio rendition (init + every segment) as ffprobe and ffmpeg see it.
    static func audioRendition(base: String, stack: StorecastStack) async throws -> (stream: String, duration: Double, decodeErrors: String) {
        var playlist = ""
        let ended = await StorecastStack.eventually(timeout: .seconds(15)) {
            playlist = await TestEnvironment.httpText("\(base)/audio/index.m3u8")
            return playlist.contains("#EXT-X-ENDLIST")
        }
        #expect(ended, "audio rendition: \(playlist)\n\(stack.logs())")
        var bytes = try #require(await TestEnvironment.httpGet("\(base)/audio/init.mp4")).body
        for name in playlist.split(separator: "\n").filter({ $0.hasSuffix(".m4s") }) {
            bytes += try #require(await TestEnvironment.httpGet("\(base)/audio/\(name)")).body
        }
        let file = stack.logDirectory.appendingPathComponent("audio-\(UUID().uuidString.prefix(6)).mp4")
        try Data(bytes).write(to: file)
        let stream = try await EndToEndTests.probe(file, ["-show_entries", "stream=codec_name,sample_rate,channels", "-of", "csv=p=0"])
        let duration = try await EndToEndTests.probe(file, ["-show_entries", "format=duration", "-of", "csv=p=0"])
        let (_, decodeLog) = try await ServiceProcess.run(try TestEnvironment.which("ffmpeg"), ["-v", "error", "-i", file.path, "-f", "null", "-"])
        return (stream.trimmingCharacters(in: .whitespacesAndNewlines), Double(duration.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0,
                decodeLog.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// Publishers that send MP3 (ffmpeg's FLV default before AAC) or G.711 (IP cameras): the
    /// audio rendition is AAC at the same rate, decodable, and as long as what was sent. The
    /// three go live at once, on one stack.
    static let nonAACAudio: [(codec: String, rate: Int, channels: Int)] = [("libmp3lame", 44100, 2), ("pcm_alaw", 8000, 1), ("pcm_mulaw", 8000, 1)]

    @Test func nonAACAudioIsTranscodedToAAC() async throws {
        let stack = try StorecastStack()
        var keys: [String] = []
        for audio in Self.nonAACAudio { keys.append(try await stack.provisionStream(tenant: "shop", stream: "radio-\(audio.codec.replacingOccurrences(of: "_", with: "-"))")) }
        try stack.start()
        try await stack.waitUntilReady()
        let publishers = try zip(Self.nonAACAudio, keys).map { audio, key in
            try ServiceProcess(name: "publisher-\(audio.codec)", executable: try TestEnvironment.which("ffmpeg"), arguments: [
                "-hide_banner", "-loglevel", "error", "-re",
                "-f", "lavfi", "-i", "testsrc2=size=426x240:rate=30", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=\(audio.rate)",
                "-t", "8", "-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-g", "60",
                "-c:a", audio.codec, "-ar", "\(audio.rate)", "-ac", "\(audio.channels)", "-f", "flv", stack.rtmpURL(key: key),
            ], logDirectory: stack.logDirectory)
        }
        for (audio, publisher) in zip(Self.nonAACAudio, publishers) {
            #expect(await publisher.wait(timeout: 30) == 0, "\(audio.codec) publisher: \(publisher.log)")
        }
        for audio in Self.nonAACAudio {
            let base = "\(stack.playbackBase)/live/shop/radio-\(audio.codec.replacingOccurrences(of: "_", with: "-"))"
            let rendition = try await Self.audioRendition(base: base, stack: stack)
            #expect(rendition.stream == "aac,\(audio.rate),\(audio.channels)", "\(audio.codec)")
            #expect(rendition.duration > 6.5, "\(audio.codec): about 8 s of audio: \(rendition.duration)")
            #expect(rendition.decodeErrors.isEmpty, "\(audio.codec): \(rendition.decodeErrors)")
            let master = await TestEnvironment.httpText("\(base)/master.m3u8")
            #expect(master.contains("mp4a.40.2"), "\(audio.codec): \(master)")
        }
        let statuses = await stack.stop()
        #expect(statuses.values.allSatisfy { $0 == 0 }, "graceful SIGTERM exit: \(statuses)")
    }

    /// A HaishinKit-shaped publisher sending HEVC and Opus over Enhanced RTMP: the audio
    /// rendition is AAC at 48 kHz and plays for as long as was sent.
    @Test func opusOverEnhancedRTMPIsTranscodedToAAC() async throws {
        let stack = try StorecastStack()
        let key = try await stack.provisionStream(tenant: "shop", stream: "opus")
        try stack.start()
        try await stack.waitUntilReady()
        let video = try await ScriptedMedia.hevc(width: 640, height: 360, seconds: 6, directory: stack.logDirectory)
        let audio = try await ScriptedMedia.opus(seconds: 6, directory: stack.logDirectory)
        try await ScriptedPublisher.run(port: stack.rtmpPort, key: key, frames: ScriptedMedia.interleave(video, audio))
        let base = "\(stack.playbackBase)/live/shop/opus"
        let rendition = try await Self.audioRendition(base: base, stack: stack)
        #expect(rendition.stream == "aac,48000,2")
        #expect(rendition.duration > 4.5, "about 6 s of audio: \(rendition.duration)")
        #expect(rendition.decodeErrors.isEmpty, "\(rendition.decodeErrors)")
        let statuses = await stack.stop()
        #expect(statuses.values.allSatisfy { $0 == 0 }, "graceful SIGTERM exit: \(statuses)")
    }

    /// `--source-rung`: the publisher's own H.264 is served as one more rendition, untouched,
    /// B-frames and all: the fMP4 carries each picture's composition offset.
    @Test func sourceRungPassesThePublishersH264Through() async throws {
        let stack = try StorecastStack()
        let key = try await stack.provisionStream(tenant: "shop", stream: "source")
        try stack.start(workerArguments: ["--source-rung"])
        try await stack.waitUntilReady()
        let publisher = try Self.publisher(url: stack.rtmpURL(key: key), seconds: 8, logDirectory: stack.logDirectory, bFrames: true)
        let base = "\(stack.playbackBase)/live/shop/source"
        var master = ""
        _ = await StorecastStack.eventually(timeout: .seconds(15)) {
            master = await TestEnvironment.httpText("\(base)/master.m3u8")
            return Self.variants(master).count >= 3
        }
        let variants = Self.variants(master)
        #expect(variants.contains { $0.uri == "source/index.m3u8" && $0.resolution == "854x480" }, "\(master)")
        #expect(variants.contains { $0.uri == "480p/index.m3u8" } && variants.contains { $0.uri == "360p/index.m3u8" })
        _ = await publisher.wait(timeout: 20)
        let timeline = try await TranscoderPoolTests.timeline(base: base, rendition: "source", directory: stack.logDirectory)
        #expect(timeline.decodeErrors.isEmpty && timeline.pts.count >= 200, "\(timeline.pts.count) frames; \(timeline.decodeErrors)")
        // Composition offsets: pictures come in decode order with presentation times out of
        // order (pts ≠ dts), and in presentation order every frame is one 1/30 s step on.
        let packets = try await Self.probe(try #require(timeline.file), ["-select_streams", "v:0", "-show_entries", "packet=pts_time,dts_time", "-of", "csv=p=0"])
        let pairs = packets.split(separator: "\n").map { $0.split(separator: ",").compactMap { Double($0) } }.filter { $0.count == 2 }
        #expect(pairs.filter { abs($0[0] - $0[1]) > 0.001 }.count > pairs.count / 3, "B-frames keep their offsets: \(pairs.prefix(8))")
        #expect(timeline.notAdvancing > 0, "decode order is not presentation order")
        let steps = zip(timeline.pts, timeline.pts.dropFirst()).map { $1 - $0 }
        #expect(steps.allSatisfy { $0 > 0.03 && $0 < 0.037 }, "one frame per 1/30 s in presentation order: \(steps.filter { $0 <= 0.03 || $0 >= 0.037 }.prefix(5))")
        // x264 writes its settings into the stream: the publisher's (crf) survive in the source
        // rendition, while the ladder's rungs carry Storecast's (bitrate).
        let file = try #require(timeline.file)
        let bytes = String(decoding: try Data(contentsOf: file), as: UTF8.self)
        #expect(bytes.contains("crf=") && !bytes.contains("bitrate=800"), "the publisher's own bitstream")
        let rung = try await TranscoderPoolTests.timeline(base: base, rendition: "480p", directory: stack.logDirectory)
        #expect(String(decoding: try Data(contentsOf: try #require(rung.file)), as: UTF8.self).contains("bitrate=800"))
        let statuses = await stack.stop()
        #expect(statuses.values.allSatisfy { $0 == 0 }, "graceful SIGTERM exit: \(statuses)")
    }

    @Test func unknownKeyIsRefusedAndIngestKeepsServing() async throws {
        let stack = try StorecastStack()
        let key = try await stack.provisionStream(tenant: "shop", stream: "launch")
        try stack.start()
        try await stack.waitUntilReady()

        let wrong = try Self.publisher(url: stack.rtmpURL(key: "sk_0000000000000000000000000000dead"), seconds: 3, logDirectory: stack.logDirectory)
        let wrongStatus = await wrong.wait(timeout: 20)
        #expect(wrongStatus != 0, "ffmpeg must fail on a refused key")
        #expect(wrong.log.contains("Unknown stream key"), "ffmpeg shows our status text: \(wrong.log)")
        let ingestLog = stack.service("storecast-ingest")?.log ?? ""
        #expect(ingestLog.contains("publish refused: unknown stream key"))
        #expect(ingestLog.contains("remote=127.0.0.1:"), "refusal logged with the remote address")
        #expect(stack.service("storecast-ingest")?.isRunning == true)

        // The same ingest still takes a good publisher.
        let good = try Self.publisher(url: stack.rtmpURL(key: key), seconds: 4, logDirectory: stack.logDirectory)
        #expect(await good.wait(timeout: 30) == 0, "good publisher failed: \(good.log)")
        #expect(stack.service("storecast-ingest")?.log.contains("publish started") == true)
        _ = await stack.stop()
    }
}

/// HEVC over Enhanced RTMP, as HaishinKit publishes it, comes out as the H.264 ladder; a
/// publisher's resolution change is absorbed by the renditions.
@Suite(.serialized) struct EnhancedRTMPEndToEndTests {
    @Test func hevcFromAHaishinKitShapedPublisherBecomesAnH264Ladder() async throws {
        let stack = try StorecastStack()
        let key = try await stack.provisionStream(tenant: "shop", stream: "hevc")
        try stack.start()
        try await stack.waitUntilReady()
        let video = try await ScriptedMedia.hevc(width: 854, height: 480, seconds: 8, directory: stack.logDirectory)
        let audio = try await ScriptedMedia.aac(seconds: 8, directory: stack.logDirectory)
        #expect(video.count == 241, "sequence start + 240 frames")
        let publishing = Task { try await ScriptedPublisher.run(port: stack.rtmpPort, key: key, frames: ScriptedMedia.interleave(video, audio)) }

        var master = ""
        let appeared = await StorecastStack.eventually(timeout: .seconds(15)) {
            guard let r = await TestEnvironment.httpGet("\(stack.playbackBase)/live/shop/hevc/master.m3u8"), r.status == 200 else { return false }
            master = String(decoding: r.body, as: UTF8.self)
            return true
        }
        #expect(appeared, "no playlist for the HEVC stream:\n\(stack.logs())")
        let variants = EndToEndTests.variants(master)
        #expect(variants.map(\.resolution) == ["854x480", "640x360"])
        for v in variants {
            let file = try await EndToEndTests.fetchSample(base: "\(stack.playbackBase)/live/shop/hevc", playlistURI: v.uri, segmentIndex: 0, into: stack.logDirectory)
            let probe = try await EndToEndTests.probe(file, ["-select_streams", "v:0", "-show_entries", "stream=codec_name,width,height", "-of", "csv=p=0"])
            let parts = v.resolution.split(separator: "x")
            #expect(probe.trimmingCharacters(in: .whitespacesAndNewlines) == "h264,\(parts[0]),\(parts[1])")
        }
        try await publishing.value
        #expect(stack.service("storecast-ingest")?.log.contains("client=FMLE/3.0 (compatible; FMSc/1.0)") == true)
        _ = await stack.stop()
    }

    /// With `--source-rung`, an HEVC publisher's own stream is passed through as an `hvc1`
    /// rendition next to the H.264 ladder, with a CODECS string from its real SPS.
    @Test func hevcSourceRungIsPackagedAsHvc1() async throws {
        let stack = try StorecastStack()
        let key = try await stack.provisionStream(tenant: "shop", stream: "hevc-source")
        try stack.start(workerArguments: ["--source-rung"])
        try await stack.waitUntilReady()
        let video = try await ScriptedMedia.hevc(width: 854, height: 480, seconds: 8, directory: stack.logDirectory)
        let audio = try await ScriptedMedia.aac(seconds: 8, directory: stack.logDirectory)
        let publishing = Task { try await ScriptedPublisher.run(port: stack.rtmpPort, key: key, frames: ScriptedMedia.interleave(video, audio)) }
        let base = "\(stack.playbackBase)/live/shop/hevc-source"
        var master = ""
        let appeared = await StorecastStack.eventually(timeout: .seconds(15)) {
            guard let r = await TestEnvironment.httpGet("\(base)/master.m3u8"), r.status == 200 else { return false }
            master = String(decoding: r.body, as: UTF8.self)
            return master.contains("source/index.m3u8")
        }
        #expect(appeared, "a source variant: \(master)\n\(stack.logs())")
        let line = master.split(separator: "\n").map(String.init)
        let inf = try #require(line.firstIndex { EndToEndTests.withoutGeneration($0) == "source/index.m3u8" }.map { line[$0 - 1] })
        #expect(inf.contains("CODECS=\"hvc1.1.6.L93.90,mp4a.40.2\"") || inf.contains("CODECS=\"hvc1."), "\(inf)")
        #expect(inf.contains("RESOLUTION=854x480"))
        let file = try await EndToEndTests.fetchSample(base: base, playlistURI: "source/index.m3u8", segmentIndex: 0, into: stack.logDirectory)
        let probe = try await EndToEndTests.probe(file, ["-select_streams", "v:0", "-count_frames", "-show_entries", "stream=codec_name,codec_tag_string,width,height,nb_read_frames", "-of", "csv=p=0"])
        let fields = probe.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",").map(String.init)
        #expect(Array(fields.prefix(4)) == ["hevc", "854", "480", "hvc1"] || Array(fields.prefix(4)) == ["hevc", "hvc1", "854", "480"], "\(probe)")
        #expect((Int(fields.last ?? "") ?? 0) >= 30, "the passed-through segment decodes: \(probe)")
        try await publishing.value
        _ = await stack.stop()
    }

    /// A phone rotating or an app switching its capture preset, up (640x360 to 854x480) and down
    /// (854x480 to 640x360): the ladder planned from the first size stays, every rendition at its
    /// size, with no discontinuity. The passed-through source rung changes size: its playlist
    /// switches to a second init segment (EXT-X-MAP) where the new size starts, and the segments
    /// on either side decode at their own size.
    @Test(arguments: [(640, 360, 854, 480), (854, 480, 640, 360)])
    func publisherResolutionChangeKeepsEveryRenditionAtItsSize(_ sizes: (Int, Int, Int, Int)) async throws {
        let stack = try StorecastStack()
        let key = try await stack.provisionStream(tenant: "shop", stream: "switch")
        try stack.start(workerArguments: ["--source-rung"])
        try await stack.waitUntilReady()
        let before = try await ScriptedMedia.hevc(width: sizes.0, height: sizes.1, seconds: 4, directory: stack.logDirectory)
        let after = try await ScriptedMedia.hevc(width: sizes.2, height: sizes.3, seconds: 4, directory: stack.logDirectory)
        try await ScriptedPublisher.run(port: stack.rtmpPort, key: key, frames: before + ScriptedMedia.shifted(after, by: 4000))
        let base = "\(stack.playbackBase)/live/shop/switch"
        let expected = sizes.1 == 360 ? [("360p", 640, 360)] : [("480p", 854, 480), ("360p", 640, 360)]
        let master = try await StorecastStack.eventually(timeout: .seconds(10)) {
            await TestEnvironment.httpText(base + "/master.m3u8").contains("#EXT-X-STREAM-INF")
        }
        #expect(master)
        for (name, width, height) in expected {
            var playlist = ""
            _ = await StorecastStack.eventually(timeout: .seconds(10)) {
                playlist = await TestEnvironment.httpText(base + "/\(name)/index.m3u8")
                return playlist.contains("#EXT-X-ENDLIST")
            }
            let segments = playlist.split(separator: "\n").filter { $0.hasSuffix(".m4s") }
            #expect(segments.count >= 3, "segments before and after the change: \(playlist)")
            #expect(!playlist.contains("DISCONTINUITY"), "viewers see no switch")
            let last = try await EndToEndTests.fetchSample(base: base, playlistURI: "\(name)/index.m3u8", segmentIndex: segments.count - 1, into: stack.logDirectory)
            let probe = try await EndToEndTests.probe(last, ["-select_streams", "v:0", "-show_entries", "stream=width,height", "-of", "csv=p=0"])
            #expect(probe.trimmingCharacters(in: .whitespacesAndNewlines) == "\(width),\(height)", "\(name) keeps its size")
            let frames = try await EndToEndTests.probe(last, ["-select_streams", "v:0", "-count_frames", "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0"])
            #expect((Int(frames.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) >= 30, "frames after the change are encoded: \(frames)")
        }
        let variants = EndToEndTests.variants(await TestEnvironment.httpText(base + "/master.m3u8"))
        #expect(variants.filter { $0.uri != "source/index.m3u8" }.map(\.resolution) == expected.map { "\($0.1)x\($0.2)" }, "the ladder planned from the first size stays")
        var source = ""
        _ = await StorecastStack.eventually(timeout: .seconds(10)) {
            source = await TestEnvironment.httpText(base + "/source/index.m3u8")
            return source.contains("#EXT-X-ENDLIST")
        }
        #expect(source.contains("#EXT-X-MAP:URI=\"init.mp4\"") && source.contains("#EXT-X-MAP:URI=\"init-1.mp4\""), "the source rung's map changes: \(source)")
        let sourceSegments = source.split(separator: "\n").filter { $0.hasSuffix(".m4s") }.count
        for (index, size) in [(0, "\(sizes.0),\(sizes.1)"), (sourceSegments - 1, "\(sizes.2),\(sizes.3)")] {
            let file = try await EndToEndTests.fetchSample(base: base, playlistURI: "source/index.m3u8", segmentIndex: index, into: stack.logDirectory)
            let probe = try await EndToEndTests.probe(file, ["-select_streams", "v:0", "-count_frames", "-show_entries", "stream=width,height,nb_read_frames", "-of", "csv=p=0"])
            #expect(probe.trimmingCharacters(in: .whitespacesAndNewlines).hasPrefix(size + ","), "source segment \(index) decodes at its own size: \(probe)")
        }
        _ = await stack.stop()
    }

    /// The seller's app goes to the background: video stops for 3 s while audio continues. The
    /// renditions stay alive with a dimmed still of the last frame, then resume at the next real
    /// keyframe, all on one timeline.
    /// Without a slate picture the slate is the last frame dimmed; with `--slate-image` (a flat
    /// grey JPEG here) it is that picture.
    @Test(arguments: [false, true])
    func videoGapIsCoveredByASlate(operatorPicture: Bool) async throws {
        let stack = try StorecastStack()
        let key = try await stack.provisionStream(tenant: "shop", stream: "background")
        var workerArguments: [String] = []
        if operatorPicture {
            let picture = stack.logDirectory.appendingPathComponent("slate.jpg")
            let (status, output) = try await ServiceProcess.run(try TestEnvironment.which("ffmpeg"), [
                "-v", "error", "-y", "-f", "lavfi", "-i", "color=c=0xC8C8C8:s=320x180", "-frames:v", "1", picture.path])
            #expect(status == 0, "\(output)")
            workerArguments = ["--slate-image", picture.path]
        }
        try stack.start(workerArguments: workerArguments)
        try await stack.waitUntilReady()
        let before = try await ScriptedMedia.hevc(width: 640, height: 360, seconds: 4, directory: stack.logDirectory)
        let after = ScriptedMedia.shifted(try await ScriptedMedia.hevc(width: 640, height: 360, seconds: 3, directory: stack.logDirectory), by: 7000)
        let audio = try await ScriptedMedia.aac(seconds: 10, directory: stack.logDirectory)
        try await ScriptedPublisher.run(port: stack.rtmpPort, key: key, frames: ScriptedMedia.interleave(before + after, audio))
        let timeline = try await TranscoderPoolTests.timeline(base: "\(stack.playbackBase)/live/shop/background", rendition: "360p", directory: stack.logDirectory)
        print("video gap: \(timeline.pts.count) frames, largest gap \(timeline.largestGap) s, \(timeline.discontinuities) discontinuities")
        #expect(timeline.largestGap <= 0.25, "slate frames fill the 3 s without video; largest gap \(timeline.largestGap) s")
        #expect(timeline.discontinuities == 0)
        #expect(timeline.decodeErrors.isEmpty, "\(timeline.decodeErrors)")
        let inGap = timeline.pts.filter { $0 > 4.5 && $0 < 6.5 }
        #expect((8...12).contains(inGap.count), "about 5 slate frames per second in the gap: \(inGap.count)")
        #expect(timeline.pts.contains { $0 > 7.5 }, "real video resumes after the gap")

        // The slate is the last picture darkened (mean luma in the gap well below before it), or
        // the operator's picture.
        let file = try #require(timeline.file)
        let (_, stats) = try await ServiceProcess.run(try TestEnvironment.which("ffprobe"), [
            "-v", "error", "-f", "lavfi", "-i", "movie=\(file.path),signalstats", "-show_entries", "frame=pts_time:frame_tags=lavfi.signalstats.YAVG", "-of", "csv=p=0",
        ])
        let luma = stats.split(separator: "\n").compactMap { line -> (Double, Double)? in
            let f = line.split(separator: ",").compactMap { Double($0) }
            return f.count == 2 ? (f[0], f[1]) : nil
        }
        let mean = { (r: ClosedRange<Double>) in
            let v = luma.filter { r.contains($0.0) }.map(\.1)
            return v.isEmpty ? 0 : v.reduce(0, +) / Double(v.count)
        }
        let live = mean(1.0...3.9), slate = mean(4.6...6.5)
        if operatorPicture {
            // Grey 200 in full range is about 188 in video range.
            #expect((180...196).contains(slate), "the operator's grey picture: luma \(slate) (live \(live))")
        } else {
            #expect(live > 0 && slate > 0 && slate < live * 0.6, "slate luma \(slate) vs live \(live)")
        }
        let statuses = await stack.stop()
        #expect(statuses.values.allSatisfy { $0 == 0 }, "graceful SIGTERM exit: \(statuses)")
    }

    /// An operator gives a tenant a ladder profile through the control API: one 360p rung,
    /// keyframes every second. The next publish is transcoded that way. At the same time another
    /// tenant, whose plan goes up to 480p (its maximum ladder), publishes 720p with the worker's
    /// own field ladder and gets 480p and 360p.
    @Test func tenantLadderProfileShapesTheLadder() async throws {
        let stack = try StorecastStack()
        let key = try await stack.provisionStream(tenant: "shop", stream: "profiled")
        let cappedKey = try await stack.provisionStream(tenant: "capped", stream: "show")
        try stack.start()
        try await stack.waitUntilReady()
        let api = "http://127.0.0.1:\(stack.apiPort)/v1"
        let profile = #"{"name":"mobile","rungs":[{"name":"360p","shortSide":360,"bitrate":500000}],"preset":"ultrafast","gopSeconds":1,"default":true}"#
        let created = try #require(await TestEnvironment.http("POST", "\(api)/tenants/shop/ladder-profiles", json: profile))
        #expect(created.status == 201, "\(String(decoding: created.body, as: UTF8.self))")
        let badGOP = try #require(await TestEnvironment.http("POST", "\(api)/tenants/shop/ladder-profiles", json: profile.replacingOccurrences(of: "\"gopSeconds\":1", with: "\"gopSeconds\":3")))
        #expect(badGOP.status == 400 && String(decoding: badGOP.body, as: UTF8.self).contains(#""field":"gopSeconds""#))
        let noTenant = try #require(await TestEnvironment.http("POST", "\(api)/tenants/nobody/ladder-profiles", json: profile))
        #expect(noTenant.status == 404, "\(String(decoding: noTenant.body, as: UTF8.self))")
        let noStream = try #require(await TestEnvironment.http("PUT", "\(api)/tenants/shop/streams/nope/ladder-profile", json: #"{"name":"mobile"}"#))
        #expect(noStream.status == 404 && String(decoding: noStream.body, as: UTF8.self).contains("\"error\""))

        let ceiling = try #require(await TestEnvironment.http("PATCH", "\(api)/tenants/capped", json: #"{"maxRenditionShortSide":480}"#))
        #expect(ceiling.status == 200, "\(String(decoding: ceiling.body, as: UTF8.self))")

        let publisher = try EndToEndTests.publisher(url: stack.rtmpURL(key: key), seconds: 8, logDirectory: stack.logDirectory)
        let capped = try EndToEndTests.publisher(url: stack.rtmpURL(key: cappedKey), seconds: 8, logDirectory: stack.logDirectory, size: "1280x720", name: "capped-publisher")
        defer { capped.stop(grace: 1) }
        let base = "\(stack.playbackBase)/live/shop/profiled"
        let timeline = try await TranscoderPoolTests.timeline(base: base, rendition: "360p", directory: stack.logDirectory)
        _ = await publisher.wait(timeout: 20)
        let master = await TestEnvironment.httpText("\(base)/master.m3u8")
        #expect(EndToEndTests.variants(master).map(\.resolution) == ["640x360"], "only the profile's rung: \(master)")
        let cappedMaster = await TestEnvironment.httpText("\(stack.playbackBase)/live/capped/show/master.m3u8")
        #expect(EndToEndTests.variants(cappedMaster).map(\.resolution) == ["854x480", "640x360"], "the field ladder up to the tenant's 480p: \(cappedMaster)")
        #expect(stack.service("storecast-transcoder")?.log.contains("ladder_ceiling=480") == true)
        let file = try #require(timeline.file)
        let frames = try await EndToEndTests.probe(file, ["-select_streams", "v:0", "-show_entries", "frame=key_frame,pts_time", "-of", "csv=p=0"])
        let keyTimes = frames.split(separator: "\n").filter { $0.hasPrefix("1,") }.compactMap { Double($0.split(separator: ",")[1]) }
        let spacing = zip(keyTimes, keyTimes.dropFirst()).map { ($1 - $0).rounded(toPlaces: 2) }
        // An IDR every second, after the transcoder's fast start (one extra IDR 0.4 s after the first).
        #expect(keyTimes.count >= 5 && spacing.prefix(2) == [0.4, 0.6] && spacing.dropFirst(2).allSatisfy { $0 == 1.0 }, "an IDR every second: \(keyTimes)")
        #expect(stack.service("storecast-ingest")?.log.contains("ladder_profile=mobile") == true)
        let statuses = await stack.stop()
        #expect(statuses.values.allSatisfy { $0 == 0 }, "graceful SIGTERM exit: \(statuses)")
    }
}

extension Double {
    func rounded(toPlaces places: Int) -> Double {
        let scale = Foundation.pow(10, Double(places))
        return (self * scale).rounded() / scale
    }
}
