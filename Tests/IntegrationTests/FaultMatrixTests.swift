import Foundation
import PostgresClient
import Testing

/// The fast rows of the fault matrix (docs/reliability.md), judged as players see the stream:
/// every media playlist of every rendition is followed with blocking reloads while a real ffmpeg
/// publisher (a 720p source through the field ladder: 720p, 480p, 360p and audio) stalls or
/// drops and comes back. A rendition that stops advancing, or gets an ENDLIST while
/// the show is live, fails the test: its viewers froze.
@Suite(.serialized) struct FaultMatrixTests {
    /// One segment: the extra stall a fault may cost beyond the publisher's own silence.
    static let segment = 2.0

    /// A 720p source: the field ladder plans 720p, 480p and 360p from it.
    static func publisher(url: String, seconds: Int, logDirectory: URL, name: String = "ffmpeg-publisher") throws -> ServiceProcess {
        try EndToEndTests.publisher(url: url, seconds: seconds, logDirectory: logDirectory, size: "1280x720", name: name)
    }

    /// Every rendition: no ENDLIST while live, still advancing at the end, and within `bound`
    /// seconds without a new part over each window. Returns the longest gap per rendition and
    /// window, for the figures.
    static func judge(_ timelines: [String: RenditionWatcher.Timeline], windows: [(name: String, range: ClosedRange<Double>, bound: Double)], end: Double) -> [String] {
        var figures: [String] = []
        for (uri, t) in timelines.sorted(by: { $0.key < $1.key }) {
            #expect(!t.endlist, "\(uri) got an ENDLIST while the show was live")
            #expect(RenditionWatcher.longestGap(t.arrivals, in: (end - 3)...end) < 3, "\(uri) still advances at the end: last part at \(t.arrivals.last ?? -1) of \(end)")
            for w in windows {
                let gap = RenditionWatcher.longestGap(t.arrivals, in: w.range)
                #expect(gap <= w.bound, "\(uri): \(w.name): \(String(format: "%.2f", gap)) s without a new part (at most \(w.bound) s)")
                figures.append("\(w.name) \(uri.split(separator: "/").dropLast().last ?? ""): \(String(format: "%.2f", gap)) s")
            }
        }
        return figures
    }

    /// The seller's phone stalls (SIGSTOP) for 3 s and then for 8 s and bursts to catch up.
    /// Before, the transcoder read the silence as lag and shed its top rung for good, freezing
    /// that rung's viewers.
    @Test func aStalledPublisherNeverFreezesARendition() async throws {
        let stack = try StorecastStack()
        let key = try await stack.provisionStream(tenant: "shop", stream: "stall")
        try stack.start()
        try await stack.waitUntilReady()
        let publisher = try Self.publisher(url: stack.rtmpURL(key: key), seconds: 70, logDirectory: stack.logDirectory)
        defer { publisher.stop(grace: 1) }
        let master = "\(stack.playbackBase)/live/shop/stall/master.m3u8"
        let watcher = try await RenditionWatcher(masterURL: master)
        #expect(watcher.renditions.count == 4, "720p, 480p, 360p and audio: \(watcher.renditions)")
        try await Task.sleep(for: .seconds(6))
        var windows: [(name: String, range: ClosedRange<Double>, bound: Double)] = []
        for stall in [3, 8] {
            let from = watcher.elapsed
            kill(publisher.process.processIdentifier, SIGSTOP)
            try await Task.sleep(for: .seconds(stall))
            kill(publisher.process.processIdentifier, SIGCONT)
            try await Task.sleep(for: .seconds(10))
            windows.append(("SIGSTOP \(stall) s", from...watcher.elapsed, Double(stall) + Self.segment))
        }
        let end = watcher.elapsed
        let timelines = watcher.stop()
        let figures = Self.judge(timelines, windows: windows, end: end)
        print("fault matrix, publisher stalled: \(figures.joined(separator: "; "))")
        let after = await TestEnvironment.httpText(master)
        #expect(EndToEndTests.variants(after).count == 3, "every rung still listed: \(after)")
        #expect(publisher.isRunning, "the publisher kept publishing: \(publisher.log)")
        _ = await stack.stop()
    }

    /// The seller's phone switches from Wi-Fi to LTE: the publisher is killed and returns on the
    /// same key 2 s later. Same session and package, one discontinuity, and every rendition
    /// continues.
    @Test func aPublisherKilledAndBackAfterTwoSecondsContinuesTheShow() async throws {
        let stack = try StorecastStack()
        let key = try await stack.provisionStream(tenant: "shop", stream: "lte")
        try stack.start()
        try await stack.waitUntilReady()
        let first = try Self.publisher(url: stack.rtmpURL(key: key), seconds: 60, logDirectory: stack.logDirectory)
        defer { first.stop(grace: 1) }
        let master = "\(stack.playbackBase)/live/shop/lte/master.m3u8"
        let watcher = try await RenditionWatcher(masterURL: master)
        let generation = await TestEnvironment.httpText(master).firstMatch(of: /\n([0-9a-z]+)\/360p\/index\.m3u8/).map { String($0.1) }
        try await Task.sleep(for: .seconds(6))
        let from = watcher.elapsed
        first.kill()
        try await Task.sleep(for: .seconds(2))
        let second = try Self.publisher(url: stack.rtmpURL(key: key), seconds: 40, logDirectory: stack.logDirectory, name: "ffmpeg-publisher-2")
        defer { second.stop(grace: 1) }
        try await Task.sleep(for: .seconds(14))
        let end = watcher.elapsed
        let timelines = watcher.stop()
        // 2 s away, up to 1 s for the new encoder to start and be let in, one segment.
        let figures = Self.judge(timelines, windows: [("SIGKILL + back after 2 s", from...end, 2 + 1 + Self.segment)], end: end)
        print("fault matrix, publisher killed and back: \(figures.joined(separator: "; "))")
        let after = await TestEnvironment.httpText(master)
        #expect(after.contains("\n\(generation ?? "?")/360p/index.m3u8"), "the same package (generation \(generation ?? "none")): \(after)")
        for uri in watcher.renditions where !uri.contains("audio") {
            let playlist = await TestEnvironment.httpText(master.replacingOccurrences(of: "master.m3u8", with: uri))
            #expect(playlist.components(separatedBy: "#EXT-X-DISCONTINUITY\n").count - 1 == 1, "one cut where the timeline breaks in \(uri):\n\(playlist)")
        }
        let db = PostgresExecutor(conninfo: stack.database)
        defer { db.shutdown() }
        let sessions = try await db.execute("SELECT count(*) AS n FROM sessions")
        #expect(sessions.value(0, "n") == "1", "the same session continued: \(sessions.rows)")
        _ = await stack.stop()
    }
}
