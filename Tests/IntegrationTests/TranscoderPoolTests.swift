import Foundation
import PostgresClient
import StorecastRuntime
import Testing

/// Several transcoder workers on real parts: leases in PostgreSQL, load balancing, `kill -9`
/// failover and SIGTERM drain, judged from the packager's output timestamps (ffprobe), never
/// from wall-clock time.
@Suite(.serialized) struct TranscoderPoolTests {
    /// A small live source (426x240, one video rung plus audio) so several fit on two cores.
    static func publisher(url: String, seconds: Int, name: String, logDirectory: URL, size: String = "426x240") throws -> ServiceProcess {
        try ServiceProcess(name: name, executable: try TestEnvironment.which("ffmpeg"), arguments: [
            "-hide_banner", "-loglevel", "error", "-re",
            "-f", "lavfi", "-i", "testsrc2=size=\(size):rate=30",
            "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100",
            "-t", "\(seconds)", "-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-g", "60",
            "-c:a", "aac", "-b:a", "64k", "-f", "flv", url,
        ], logDirectory: logDirectory)
    }

    static func leases(_ stack: StorecastStack, currentOnly: Bool) async throws -> [TranscoderLease] {
        let db = PostgresExecutor(conninfo: stack.database)
        defer { db.shutdown() }
        return try await LeaseLedger.list(in: db, currentOnly: currentOnly)
    }

    /// What the packager made of one rendition once the stream ended: every video packet's
    /// presentation time (init + all segments, read by ffprobe) and the playlist's discontinuities.
    struct Timeline {
        var pts: [Double]
        /// Frames whose presentation time is not after the previous frame's (in file order):
        /// republished or reordered media.
        var notAdvancing: Int
        var discontinuities: Int
        var segments: Int
        var decodeErrors: String
        /// init + every segment, concatenated.
        var file: URL?

        /// The longest stretch without a frame.
        var largestGap: Double { zip(pts, pts.dropFirst()).map { $1 - $0 }.max() ?? .infinity }
    }

    static func timeline(base: String, rendition: String, directory: URL) async throws -> Timeline {
        var playlist = ""
        let ended = await StorecastStack.eventually(timeout: .seconds(40)) {
            playlist = await TestEnvironment.httpText("\(base)/\(rendition)/index.m3u8")
            return playlist.contains("#EXT-X-ENDLIST")
        }
        #expect(ended, "the rendition playlist ends after the publisher stops: \(playlist)")
        let names = playlist.split(separator: "\n").filter { $0.hasSuffix(".m4s") }
        var bytes = try #require(await TestEnvironment.httpGet("\(base)/\(rendition)/init.mp4")).body
        for name in names { bytes += try #require(await TestEnvironment.httpGet("\(base)/\(rendition)/\(name)")).body }
        let file = directory.appendingPathComponent("\(rendition)-\(UUID().uuidString.prefix(6)).mp4")
        try Data(bytes).write(to: file)
        let probe = try await EndToEndTests.probe(file, ["-select_streams", "v:0", "-show_entries", "packet=pts_time", "-of", "csv=p=0"])
        let inOrder = probe.split(separator: "\n").compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }
        let pts = inOrder.sorted()
        let (_, decodeLog) = try await ServiceProcess.run(try TestEnvironment.which("ffmpeg"), ["-v", "error", "-i", file.path, "-f", "null", "-"])
        return Timeline(pts: pts, notAdvancing: zip(inOrder, inOrder.dropFirst()).filter { $1 <= $0 }.count, discontinuities: playlist.components(separatedBy: "#EXT-X-DISCONTINUITY\n").count - 1,
                        segments: names.count, decodeErrors: decodeLog.trimmingCharacters(in: .whitespacesAndNewlines), file: file)
    }

    /// Waits for the stream's first segments and returns the worker holding it.
    static func runningWorker(_ stack: StorecastStack, base: String) async throws -> String {
        let packaged = await StorecastStack.eventually(timeout: .seconds(20)) {
            let text = await TestEnvironment.httpText("\(base)/240p/index.m3u8")
            return text.split(separator: "\n").filter { $0.hasPrefix("seg-") }.count >= 2
        }
        #expect(packaged, "segments before the worker goes away:\n\(stack.logs())")
        return try #require(try await leases(stack, currentOnly: true).first?.workerID)
    }

    /// Fair share (issue 23): a worker's slots count 1080p30 sources, and a stream costs its pixel
    /// rate. A 1-slot worker takes two 720p30 shows (0.444 slot each; unweighed, it took one) and
    /// not a third, which waits until one of the two ends and then goes on that worker.
    @Test func aWorkersSlotsAreWeighedByEachSourcesPixelRate() async throws {
        let stack = try StorecastStack()
        var keys: [String] = []
        for name in ["first", "second", "third"] { keys.append(try await stack.provisionStream(tenant: "shop", stream: name)) }
        try stack.start(workers: ["worker-a"], workerArguments: ["--slots", "1", "--rungs", "360p"], ingestArguments: ["--reconnect-window", "1"])
        try await stack.waitUntilReady(workers: 1)
        let first = try Self.publisher(url: stack.rtmpURL(key: keys[0]), seconds: 10, name: "publisher-first", logDirectory: stack.logDirectory, size: "1280x720")
        let second = try Self.publisher(url: stack.rtmpURL(key: keys[1]), seconds: 30, name: "publisher-second", logDirectory: stack.logDirectory, size: "1280x720")
        defer { first.stop(grace: 1); second.stop(grace: 1) }
        var current: [TranscoderLease] = []
        let both = try await StorecastStack.eventually(timeout: .seconds(15)) {
            current = try await Self.leases(stack, currentOnly: true)
            return current.count == 2
        }
        #expect(both && Set(current.map(\.workerID)) == ["worker-a"], "two 720p30 shows on one 1-slot worker: \(current)\n\(stack.logs())")
        let third = try Self.publisher(url: stack.rtmpURL(key: keys[2]), seconds: 30, name: "publisher-third", logDirectory: stack.logDirectory, size: "1280x720")
        defer { third.stop(grace: 1) }
        try await Task.sleep(for: .seconds(3))
        current = try await Self.leases(stack, currentOnly: true)
        #expect(!current.contains { $0.stream == "third" }, "a third does not fit (1.33 slots): \(current)")
        let ingestLog = stack.service("storecast-ingest")?.log ?? ""
        #expect(ingestLog.contains("stream weighed in transcoder slots") && ingestLog.contains("slots=0.444"), "each stream's weight is logged:\n\(ingestLog.suffix(3000))")
        // The first show ends: its 0.444 slot frees, and the third goes on the same worker.
        let moved = try await StorecastStack.eventually(timeout: .seconds(20)) {
            current = try await Self.leases(stack, currentOnly: true)
            return Set(current.map(\.stream)) == ["second", "third"]
        }
        #expect(moved && Set(current.map(\.workerID)) == ["worker-a"], "the third show takes the freed slots: \(current)")
        let packaged = await StorecastStack.eventually(timeout: .seconds(15)) {
            await TestEnvironment.httpGet("\(stack.playbackBase)/live/shop/third/master.m3u8")?.status == 200
        }
        #expect(packaged, "the third show plays once placed")
        _ = await stack.stop()
    }

    @Test func twoWorkersShareFourStreamsByLoad() async throws {
        let stack = try StorecastStack()
        var keys: [String] = []
        for i in 1...4 { keys.append(try await stack.provisionStream(tenant: "shop", stream: "show-\(i)")) }
        try stack.start(workers: ["worker-a", "worker-b"], workerArguments: ["--slots", "4"])
        try await stack.waitUntilReady(workers: 2)
        let publishers = try keys.enumerated().map { i, key in
            try Self.publisher(url: stack.rtmpURL(key: key), seconds: 12, name: "publisher-\(i + 1)", logDirectory: stack.logDirectory)
        }

        var current: [TranscoderLease] = []
        let allLeased = try await StorecastStack.eventually(timeout: .seconds(20)) {
            current = try await Self.leases(stack, currentOnly: true)
            return current.count == 4
        }
        #expect(allLeased, "four current leases: \(current)\n\(stack.logs())")
        let perWorker = Dictionary(grouping: current, by: \.workerID).mapValues(\.count)
        #expect(perWorker == ["worker-a": 2, "worker-b": 2], "the most free capacity wins: \(perWorker)")
        #expect(Set(current.map(\.stream)) == ["show-1", "show-2", "show-3", "show-4"])

        // Operators see the same through the control API.
        let api = try #require(await TestEnvironment.httpGet("http://127.0.0.1:\(stack.apiPort)/v1/leases"))
        #expect(api.status == 200)
        let listed = try JSONDecoder().decode([String: [TranscoderLease]].self, from: Data(api.body))["leases"] ?? []
        #expect(Set(listed.map(\.workerID)) == ["worker-a", "worker-b"] && listed.count == 4)
        let bad = try #require(await TestEnvironment.httpGet("http://127.0.0.1:\(stack.apiPort)/v1/leases?current=maybe"))
        #expect(bad.status == 400 && String(decoding: bad.body, as: UTF8.self).contains(#""field":"current""#), "\(bad.status) \(String(decoding: bad.body, as: UTF8.self))")

        for i in 1...4 {
            let ready = await StorecastStack.eventually(timeout: .seconds(20)) {
                await TestEnvironment.httpGet("\(stack.playbackBase)/live/shop/show-\(i)/master.m3u8")?.status == 200
            }
            #expect(ready, "show-\(i) is packaged")
        }
        for p in publishers { _ = await p.wait(timeout: 30) }
        var history: [TranscoderLease] = []
        let released = try await StorecastStack.eventually(timeout: .seconds(20)) {
            history = try await Self.leases(stack, currentOnly: false)
            return history.count == 4 && history.allSatisfy { $0.endReason == LeaseEndReason.streamEnded.rawValue }
        }
        #expect(released, "every lease ends with its stream: \(history)")
        let statuses = await stack.stop()
        #expect(statuses.values.allSatisfy { $0 == 0 }, "clean exits: \(statuses)")
    }

    /// The worker dies in the middle of a GOP: the new one starts from ingest's GOP cache, a
    /// second before what was already packaged, and places extra keyframes in that replay, so
    /// the packager continues within 0.1 s of where the old worker stopped (without them the
    /// last frame froze until the next 2 s keyframe, in a part longer than PART-TARGET).
    @Test func killNineMovesTheStreamWithAtMostATenthOfASecondFrozen() async throws {
        let stack = try StorecastStack()
        let key = try await stack.provisionStream(tenant: "shop", stream: "failover")
        try stack.start(workers: ["worker-a", "worker-b"], packagerArguments: ["--window", "60"])
        try await stack.waitUntilReady(workers: 2)
        let publisher = try Self.publisher(url: stack.rtmpURL(key: key), seconds: 20, name: "publisher", logDirectory: stack.logDirectory)
        let base = "\(stack.playbackBase)/live/shop/failover"
        let victim = try await Self.runningWorker(stack, base: base)
        let survivor = victim == "worker-a" ? "worker-b" : "worker-a"
        let process = try #require(stack.service(victim))
        try await Task.sleep(for: .milliseconds(900))  // a segment just closed: now mid-GOP
        kill(process.process.processIdentifier, SIGKILL)
        let killed = ContinuousClock.now

        var history: [TranscoderLease] = []
        let moved = try await StorecastStack.eventually(timeout: .seconds(10)) {
            history = try await Self.leases(stack, currentOnly: false)
            return history.contains { $0.workerID == survivor && $0.endedAt == nil }
        }
        #expect(moved, "the surviving worker holds the stream: \(history)\n\(stack.logs())")
        print("kill -9 failover: the surviving worker's lease was visible \(ContinuousClock.now - killed) after the kill")
        let ended = try #require(history.first { $0.workerID == victim })
        #expect([LeaseEndReason.workerUnreachable.rawValue, LeaseEndReason.workerSilent.rawValue].contains(ended.endReason ?? ""))

        _ = await publisher.wait(timeout: 40)
        let timeline = try await Self.timeline(base: base, rendition: "240p", directory: stack.logDirectory)
        print("kill -9 failover: \(timeline.segments) segments, \(timeline.discontinuities) discontinuities, largest gap \(timeline.largestGap) s")
        #expect(timeline.segments >= 8, "segments from both workers")
        #expect(timeline.discontinuities == 0, "a splice, not a discontinuity")
        #expect(timeline.notAdvancing == 0, "nothing published twice or out of order")
        #expect(timeline.largestGap < 0.25, "the picture continues within 0.1 s (+ a frame) of where the old worker stopped; largest gap between frames \(timeline.largestGap) s")
        #expect(timeline.decodeErrors.isEmpty, "init + every segment decodes: \(timeline.decodeErrors)")
        let packager = stack.service("storecast-packager")?.log ?? ""
        #expect(packager.contains("rendition spliced"), "the packager spliced the takeover:\n\(packager.suffix(2000))")
        let statuses = await stack.stop()
        #expect(statuses.filter { $0.key != victim }.values.allSatisfy { $0 == 0 }, "clean exits: \(statuses)")
    }

    @Test func sigtermDrainsAtAKeyframeWithoutADiscontinuity() async throws {
        let stack = try StorecastStack()
        let key = try await stack.provisionStream(tenant: "shop", stream: "drain")
        try stack.start(workers: ["worker-a", "worker-b"], packagerArguments: ["--window", "60"])
        try await stack.waitUntilReady(workers: 2)
        let publisher = try Self.publisher(url: stack.rtmpURL(key: key), seconds: 16, name: "publisher", logDirectory: stack.logDirectory)
        let base = "\(stack.playbackBase)/live/shop/drain"
        let draining = try await Self.runningWorker(stack, base: base)
        let process = try #require(stack.service(draining))
        process.process.terminate()
        let status = await process.wait(timeout: 15)
        #expect(status == 0, "the draining worker exits cleanly:\n\(process.log.suffix(2000))")
        #expect(process.log.contains("drained"), "it waited for its stream to move:\n\(process.log.suffix(2000))")

        let history = try await Self.leases(stack, currentOnly: false)
        #expect(history.first { $0.workerID == draining }?.endReason == LeaseEndReason.workerDraining.rawValue, "\(history)")
        #expect(history.contains { $0.workerID != draining && $0.endedAt == nil }, "the other worker holds the stream: \(history)")

        _ = await publisher.wait(timeout: 40)
        let timeline = try await Self.timeline(base: base, rendition: "240p", directory: stack.logDirectory)
        print("drain: \(timeline.segments) segments, \(timeline.discontinuities) discontinuities, largest gap \(timeline.largestGap) s")
        #expect(timeline.discontinuities == 0, "a drain hands over on the same timeline")
        #expect(timeline.notAdvancing == 0, "nothing published twice or out of order")
        #expect(timeline.largestGap < 0.25, "frames continue across the hand-over; largest gap \(timeline.largestGap) s")
        #expect(timeline.decodeErrors.isEmpty, "init + every segment decodes: \(timeline.decodeErrors)")
        let statuses = await stack.stop()
        #expect(statuses.values.allSatisfy { $0 == 0 }, "clean exits: \(statuses)")
    }
}
