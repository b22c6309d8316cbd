import Foundation
import PostgresClient
import StorecastWire
import Testing

/// Real publishers (ffmpeg's RTMP, GStreamer's rtmp2sink, GStreamer's rtmpsink = librtmp as in
/// OBS) against storecast-ingest; what reaches a transcoder over ZeroMQ is checked unit by unit.
@Suite(.serialized) struct IngestInteropTests {
    @Test(arguments: Publisher.allCases)
    func publisherDeliversACompleteStream(_ publisher: Publisher) async throws {
        let h = try await IngestHarness()
        let p = try publisher.start(url: h.rtmpURL, frames: 90, logDirectory: h.stack.logDirectory)
        #expect(await p.wait(timeout: 30) == 0, "\(publisher) failed: \(p.log)")
        let ended = await StorecastStack.eventually(timeout: .seconds(5)) { h.worker.ended }
        #expect(ended, "stream end reached the worker")

        guard case .assign(let assignment) = h.worker.messages.first else {
            Issue.record("first message is the lease: \(h.worker.messages.prefix(2))"); return
        }
        #expect(assignment.packagerEndpoint == "tcp://127.0.0.1:1")
        let announce = try #require(h.worker.announces.first)
        let video = try #require(announce.tracks.first { $0.kind == .video })
        #expect(video.codec == "h264" && video.width == 320 && video.height == 240)
        #expect(video.config.first == 1, "avcC configurationVersion")
        let audio = try #require(announce.tracks.first { $0.kind == .audio })
        #expect(audio.codec == "aac" && audio.sampleRate == 44_100)

        let frames = h.worker.units(track: .video)
        #expect(frames.count == 90, "every frame arrives once")
        #expect(frames.first?.isKeyframe == true)
        #expect(frames.filter(\.isKeyframe).count == 3, "a keyframe every 30 frames")
        #expect(zip(frames, frames.dropFirst()).allSatisfy { $0.dts <= $1.dts }, "monotonic decode timestamps")
        #expect(zip(frames, frames.dropFirst()).allSatisfy { $0.sequence < $1.sequence })
        let span = (frames.last?.dts ?? 0) - (frames.first?.dts ?? 0)
        #expect(abs(span - 2967) <= 40, "89 frame intervals at 30 fps: \(span) ms")
        let sound = h.worker.units(track: .audio)
        #expect(sound.count >= 100, "about 3 s of AAC frames: \(sound.count)")
        #expect(zip(sound, sound.dropFirst()).allSatisfy { $0.dts <= $1.dts })
        // Read pacing gathers ~100 ms of frames (3 video, 4 audio) per read, and the dispatcher
        // sends a worker each turn's frames as one batch: far fewer ZeroMQ messages than units.
        #expect(h.worker.mediaEnvelopes * 2 < frames.count + sound.count, "units arrive batched: \(h.worker.mediaEnvelopes) messages for \(frames.count + sound.count) units")
        #expect(await h.stop() == 0)
    }

    /// Ingest heartbeats each worker once a second (schemas/wire.md), not on every 250 ms tick
    /// of its dispatcher (which it did: 4 a second).
    @Test func ingestHeartbeatsAWorkerOnceASecond() async throws {
        let h = try await IngestHarness()
        let start = h.worker.heartbeats
        try await Task.sleep(for: .seconds(5))
        let beats = h.worker.heartbeats - start
        #expect((3...7).contains(beats), "\(beats) heartbeats in 5 s")
        #expect(await h.stop() == 0)
    }

    /// HaishinKit's and Larix's exchanges as their sources describe them (``ScriptedPublisher``;
    /// no phone here to capture one), with H.264 and AAC: HaishinKit 1.x sends FCPublish just
    /// before publish, echoes the Window Acknowledgement Size before the connect result, sends
    /// metadata as an AMF0 object and puts audio and data on one chunk stream; 2.x's metadata
    /// ECMA array says it has 0 entries; Larix uses the digest handshake and 65535-byte chunks,
    /// skips releaseStream/FCPublish, declares no frame rate and rejects any answer it did not
    /// ask for.
    @Test(arguments: [ScriptedPublisher.Shape.haishinKit1, .haishinKit2, .larix])
    func mobileSDKShapedPublisherDeliversACompleteStream(_ shape: ScriptedPublisher.Shape) async throws {
        let h = try await IngestHarness()
        let video = try await ScriptedMedia.h264(width: 320, height: 240, seconds: 3, directory: h.stack.logDirectory)
        let audio = try await ScriptedMedia.aac(seconds: 3, directory: h.stack.logDirectory)
        try await ScriptedPublisher.run(port: h.stack.rtmpPort, key: h.key, frames: ScriptedMedia.interleave(video, audio), shape: shape)
        let ended = await StorecastStack.eventually(timeout: .seconds(15)) { h.worker.ended }
        #expect(ended, "the stream ended after closeStream:\n\(h.ingest.log)")
        let announce = try #require(h.worker.announces.first)
        let track = try #require(announce.tracks.first { $0.kind == .video })
        #expect(track.codec == "h264" && track.width == 320 && track.height == 240)
        #expect(h.worker.announces.last?.tracks.contains { $0.kind == .audio && $0.codec == "aac" } == true, "audio joins once its header came")
        let frames = h.worker.units(track: .video)
        #expect(frames.count == video.count - 1, "every frame once (the first tag is the sequence header)")
        #expect(frames.filter(\.isKeyframe).count == 3, "a keyframe every 30 frames")
        #expect(zip(frames, frames.dropFirst()).allSatisfy { $0.dts < $1.dts })
        #expect(h.worker.units(track: .audio).count == audio.count - 1)
        #expect(h.ingest.log.contains("publish started"))
        // The metadata was read (object in 1.x, ECMA array claiming 0 entries in 2.x); Larix
        // declares no frame rate: it is measured from the timestamps.
        let db = PostgresExecutor(conninfo: h.stack.database)
        defer { db.shutdown() }
        var rate: String?
        _ = try await StorecastStack.eventually(timeout: .seconds(5)) {
            rate = try await db.execute("SELECT frame_rate FROM sessions ORDER BY id DESC LIMIT 1").value(0, "frame_rate")
            return rate == "30"
        }
        #expect(rate == "30", "frame rate recorded (declared, or measured for Larix)")
        #expect(await h.stop() == 0)
    }

    @Test func audioOnlyPublishIsAnnouncedWithOnlyAnAudioTrack() async throws {
        let h = try await IngestHarness()
        let p = try Publisher.gstreamerRTMP2Sink.start(url: h.rtmpURL, frames: 60, video: false, logDirectory: h.stack.logDirectory)
        #expect(await p.wait(timeout: 30) == 0, "publisher failed: \(p.log)")
        _ = await StorecastStack.eventually(timeout: .seconds(5)) { h.worker.ended }
        let announce = try #require(h.worker.announces.first)
        #expect(announce.tracks.map(\.kind) == [.audio])
        #expect(h.worker.units(track: .audio).count >= 50)
        _ = await h.stop()
    }

    @Test func droppedPublisherThatReturnsContinuesTheSession() async throws {
        let h = try await IngestHarness(reconnectWindow: 10)
        let first = try Publisher.ffmpeg.start(url: h.rtmpURL, frames: 600, logDirectory: h.stack.logDirectory)
        _ = await StorecastStack.eventually(timeout: .seconds(10)) { h.worker.units(track: .video).count >= 60 }
        kill(first.process.processIdentifier, SIGKILL)  // Wi-Fi to LTE: the connection just dies
        _ = await first.wait(timeout: 5)
        let db = PostgresExecutor(conninfo: h.stack.database)
        defer { db.shutdown() }
        let reconnecting = try await StorecastStack.eventually(timeout: .seconds(5)) {
            try await db.execute("SELECT status FROM streams").value(0, "status") == "reconnecting"
        }
        #expect(reconnecting, "stream shows as reconnecting during the window")
        let before = h.worker.units(track: .video).count
        let lastBefore = try #require(h.worker.units(track: .video).last)

        let second = try Publisher.ffmpeg.start(url: h.rtmpURL, frames: 60, logDirectory: h.stack.logDirectory)
        #expect(await second.wait(timeout: 30) == 0, "reconnecting publisher failed: \(second.log)")
        _ = await StorecastStack.eventually(timeout: .seconds(5)) { h.worker.ended }
        let announces = h.worker.announces
        #expect(announces.count == 2 && announces[1].discontinuity, "re-announced with a discontinuity, not ended: \(announces.map(\.discontinuity))")
        #expect(announces.allSatisfy { $0.sessionID == announces[0].sessionID }, "same session")
        let resumed = h.worker.units(track: .video)[before...]
        #expect(resumed.count == 60)
        #expect(resumed.first.map { $0.dts > lastBefore.dts } == true, "the timeline continues forward")
        let ends = h.worker.messages.filter { if case .streamEnd = $0 { true } else { false } }
        #expect(ends.count == 1, "one end, after the second publisher unpublished")
        let sessions = try await db.execute("SELECT count(*) AS n, max(end_reason) AS reason FROM sessions")
        #expect(sessions.int(0, "n") == 1 && sessions.value(0, "reason") == "unpublished")
        // Tenants' webhooks hear it as it went (issue 16): connected, reconnecting when the
        // connection died, connected again when it came back, ended, all of the one session.
        let events = try await db.execute("SELECT type, body::jsonb->'data'->>'sessionId' AS session FROM webhook_events ORDER BY id")
        let types = (0..<events.count).compactMap { events.value($0, "type") }
        #expect(types == ["stream.connected", "stream.reconnecting", "stream.connected", "stream.ended"], "the outbox: \(types)")
        #expect(Set((0..<events.count).compactMap { events.value($0, "session") }) == [String(announces[0].sessionID)], "one session throughout")
        _ = await h.stop()
    }

    @Test func windowExpiryEndsTheSession() async throws {
        let h = try await IngestHarness(reconnectWindow: 1)
        let p = try Publisher.ffmpeg.start(url: h.rtmpURL, frames: 600, logDirectory: h.stack.logDirectory)
        _ = await StorecastStack.eventually(timeout: .seconds(10)) { h.worker.units(track: .video).count >= 30 }
        kill(p.process.processIdentifier, SIGKILL)
        let ended = await StorecastStack.eventually(timeout: .seconds(5)) { h.worker.ended }
        #expect(ended)
        let db = PostgresExecutor(conninfo: h.stack.database)
        defer { db.shutdown() }
        let closed = try await StorecastStack.eventually(timeout: .seconds(5)) {
            try await db.execute("SELECT end_reason FROM sessions").value(0, "end_reason") == "disconnected"
        }
        #expect(closed)
        _ = await h.stop()
    }

    @Test func silentConnectionIsTakenOverButALiveOneIsNot() async throws {
        let h = try await IngestHarness(takeoverIdle: 1.5)
        let first = try Publisher.ffmpeg.start(url: h.rtmpURL, frames: 900, logDirectory: h.stack.logDirectory)
        _ = await StorecastStack.eventually(timeout: .seconds(10)) { h.worker.units(track: .video).count >= 30 }

        // While the first publisher is alive, a second one is refused.
        let rival = try Publisher.ffmpeg.start(url: h.rtmpURL, frames: 30, logDirectory: h.stack.logDirectory)
        #expect(await rival.wait(timeout: 20) != 0)
        #expect(rival.log.contains("already being published"), "rival sees why: \(rival.log)")

        // Freeze the first publisher: its TCP connection stays open but sends nothing.
        kill(first.process.processIdentifier, SIGSTOP)
        try await Task.sleep(for: .seconds(2))
        let second = try Publisher.ffmpeg.start(url: h.rtmpURL, frames: 60, logDirectory: h.stack.logDirectory)
        #expect(await second.wait(timeout: 30) == 0, "takeover publisher failed: \(second.log)")
        kill(first.process.processIdentifier, SIGCONT)
        #expect(await first.wait(timeout: 10) != 0, "the replaced connection was closed")
        #expect(h.ingest.log.contains("new publish takes over a silent connection"))
        let announces = h.worker.announces
        #expect(announces.count == 2 && announces[1].discontinuity)
        _ = await h.stop()
    }

    @Test func unsupportedCodecIsRefusedWithAClearStatus() async throws {
        let h = try await IngestHarness()
        // Sorenson H.263 (FLV codec id 2) from ffmpeg.
        let p = try ServiceProcess(name: "ffmpeg-flv1", executable: try TestEnvironment.which("ffmpeg"), arguments: [
            "-hide_banner", "-loglevel", "error", "-re", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30", "-t", "3",
            "-c:v", "flv1", "-f", "flv", h.rtmpURL,
        ], logDirectory: h.stack.logDirectory)
        #expect(await p.wait(timeout: 20) != 0, "ffmpeg must see the refusal")
        #expect(h.ingest.log.contains("publish refused: unsupported codec"))
        #expect(h.ingest.log.contains("unsupported FLV video codec id 2"))
        #expect(h.worker.units(track: .video).isEmpty)
        #expect(h.ingest.isRunning)
        _ = await h.stop()
    }

    @Test func tenantQuotaRefusesTheStreamOverTheLimit() async throws {
        let h = try await IngestHarness()
        // The harness tenant allows 10; make a tenant that allows 1 with two streams.
        _ = try await h.stack.cli(["tenant", "create", "tiny", "--max-streams", "1"])
        let keyA = try await h.stack.cli(["stream", "create", "tiny", "a"]).split(separator: "\n").first { $0.hasPrefix("stream key") }!.split(separator: " ").last!
        let keyB = try await h.stack.cli(["stream", "create", "tiny", "b"]).split(separator: "\n").first { $0.hasPrefix("stream key") }!.split(separator: " ").last!
        let a = try Publisher.ffmpeg.start(url: h.stack.rtmpURL(key: String(keyA)), frames: 300, logDirectory: h.stack.logDirectory)
        _ = await StorecastStack.eventually(timeout: .seconds(10)) { h.ingest.log.contains("stream=a tenant=tiny") || h.worker.units(track: .video).count > 10 }
        let b = try Publisher.ffmpeg.start(url: h.stack.rtmpURL(key: String(keyB)), frames: 30, logDirectory: h.stack.logDirectory)
        #expect(await b.wait(timeout: 20) != 0)
        #expect(b.log.contains("quota 1"), "the publisher is told why: \(b.log)")
        #expect(h.ingest.log.contains("publish refused: tenant at concurrent-stream quota"))
        a.stop(grace: 1)
        _ = await h.stop()
    }

    @Test func resolutionChangeMidStreamIsForwardedAsANewConfiguration() async throws {
        let h = try await IngestHarness()
        let small = try await ScriptedMedia.hevc(width: 640, height: 360, seconds: 2, directory: h.stack.logDirectory)
        let large = try await ScriptedMedia.hevc(width: 854, height: 480, seconds: 2, directory: h.stack.logDirectory)
        try await ScriptedPublisher.run(port: h.stack.rtmpPort, key: h.key, frames: small + ScriptedMedia.shifted(large, by: 2000))
        _ = await StorecastStack.eventually(timeout: .seconds(5)) { h.worker.ended }
        let sizes = h.worker.announces.compactMap { a in a.tracks.first { $0.kind == .video }.map { "\($0.width)x\($0.height) \($0.codec)" } }
        #expect(sizes == ["640x360 hevc", "854x480 hevc"])
        #expect(h.worker.announces.allSatisfy { !$0.discontinuity }, "a new configuration, not a discontinuity")
        let frames = h.worker.units(track: .video)
        #expect(frames.count == 120)
        #expect(frames[60].isKeyframe, "the new configuration starts at a keyframe")
        #expect(zip(frames, frames.dropFirst()).allSatisfy { $0.dts < $1.dts })
        _ = await h.stop()
    }
}
