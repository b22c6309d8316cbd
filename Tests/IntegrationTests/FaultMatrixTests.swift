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

    /// A live show watched from the player's side: the stack (with `workers`), a 720p ffmpeg
    /// publisher for `seconds`, and every rendition followed. The caller stops the publisher.
    struct WatchedShow {
        let stack: StorecastStack
        let key: String
        let publisher: ServiceProcess
        let watcher: RenditionWatcher
        let master: String
        /// hls.js in Chromium, with STORECAST_FAULT_PLAYER=hls.js (bench/fault_matrix.sh).
        let viewer: HlsJsViewer?
    }

    /// `player`: hls.js watches in Chromium even without STORECAST_FAULT_PLAYER.
    static func watchedShow(_ stream: String, seconds: Int, workers: [String] = ["storecast-transcoder"], ingestArguments: [String] = [], player: Bool = false) async throws -> WatchedShow {
        let stack = try StorecastStack()
        let key = try await stack.provisionStream(tenant: "shop", stream: stream)
        try stack.start(workers: workers, packagerArguments: try HlsJsViewer.packagerArguments(always: player), ingestArguments: ingestArguments)
        try await stack.waitUntilReady(workers: workers.count)
        let publisher = try Self.publisher(url: stack.rtmpURL(key: key), seconds: seconds, logDirectory: stack.logDirectory)
        let master = "\(stack.playbackBase)/live/shop/\(stream)/master.m3u8"
        do {
            let watcher = try await RenditionWatcher(masterURL: master)
            return WatchedShow(stack: stack, key: key, publisher: publisher, watcher: watcher, master: master, viewer: try await HlsJsViewer.watch(stack, stream: stream, always: player))
        } catch {
            publisher.stop(grace: 1)
            throw error
        }
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
        let show = try await Self.watchedShow("stall", seconds: 70)
        defer { show.publisher.stop(grace: 1) }
        let (stack, publisher, watcher, master) = (show.stack, show.publisher, show.watcher, show.master)
        #expect(watcher.renditions.count == 4, "720p, 480p, 360p and audio: \(watcher.renditions)")
        try await Task.sleep(for: .seconds(6))
        // The stream's live status (issue 16): healthy, its renditions, its viewers (the watcher).
        let status = "http://127.0.0.1:\(stack.apiPort)/v1/tenants/shop/streams/stall"
        func live() async -> [String: Any] {
            let body = await TestEnvironment.httpGet(status)?.body ?? []
            return (try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]) ?? [:]
        }
        func health(_ stream: [String: Any]) -> String? { (stream["health"] as? [String: Any])?["state"] as? String }
        var before: [String: Any] = [:]
        #expect(await StorecastStack.eventually(timeout: .seconds(10)) {
            before = await live()
            return health(before) == "healthy" && (before["viewers"] as? Int ?? 0) >= 1
        }, "healthy and watched: \(before)")
        let names = (before["renditions"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
        #expect(Set(names).isSuperset(of: ["720p", "480p", "360p", "audio"]) && (before["renditions"] as? [[String: Any]])?.first?["height"] as? Int == 720, "\(before)")
        var windows: [(name: String, range: ClosedRange<Double>, bound: Double)] = []
        var during: [String: Any] = [:]
        for stall in [3, 8] {
            let from = watcher.elapsed
            kill(publisher.process.processIdentifier, SIGSTOP)
            let resume = ContinuousClock.now + .seconds(stall)
            if stall == 8 {
                // Stalled 4 s, the stream is unhealthy, and says why.
                _ = await StorecastStack.eventually(timeout: .seconds(7)) {
                    during = await live()
                    return health(during) == "unhealthy"
                }
            }
            try await Task.sleep(until: resume)
            kill(publisher.process.processIdentifier, SIGCONT)
            // The publisher bursts to catch up (its backlog goes through in a few seconds); from
            // 4 s after the resume, every rendition must advance steadily for 5 s at live pace.
            let resumed = watcher.elapsed
            let recovered = await StorecastStack.eventually(timeout: .seconds(20)) { watcher.everyRenditionAdvances(since: resumed + 4, for: 5) }
            #expect(recovered, "every rendition advances steadily within 20 s of the \(stall) s stall:\n\(stack.logs())")
            windows.append(("SIGSTOP \(stall) s", from...watcher.elapsed, Double(stall) + Self.segment))
        }
        let end = watcher.elapsed
        let timelines = watcher.stop()
        let figures = Self.judge(timelines, windows: windows, end: end)
        print("fault matrix, publisher stalled: \(figures.joined(separator: "; "))")
        if let viewer = show.viewer { print("fault matrix, publisher stalled: \(await viewer.finish("publisher stalled"))") }
        let listed = await TestEnvironment.httpText(master)
        #expect(EndToEndTests.variants(listed).count == 3, "every rung still listed: \(listed)")
        #expect(publisher.isRunning, "the publisher kept publishing: \(publisher.log)")
        #expect(health(during) == "unhealthy" && ((during["health"] as? [String: Any])?["reasons"] as? [[String: Any]])?.first?["code"] as? String == "stalled",
                "unhealthy during the 8 s stall: \(during)")
        // Healthy again once the health's settle time has passed with media flowing.
        var after: [String: Any] = [:]
        #expect(await StorecastStack.eventually(timeout: .seconds(15)) {
            after = await live()
            return health(after) == "healthy"
        }, "healthy again after it: \(after)")
        // Webhooks and the events route got each change, in order.
        let db = PostgresExecutor(conninfo: stack.database)
        defer { db.shutdown() }
        var changes: [String] = []
        #expect(try await StorecastStack.eventually(timeout: .seconds(10)) {
            let rows = try await db.execute("SELECT body::jsonb->'data'->>'health' AS health FROM webhook_events WHERE type = 'stream.health_changed' ORDER BY id")
            changes = (0..<rows.count).compactMap { rows.value($0, "health") }
            return changes.first == "healthy" && changes.contains("unhealthy") && changes.last == "healthy"
        }, "stream.health_changed: \(changes)")
        _ = await stack.stop()
    }

    /// The seller's phone switches from Wi-Fi to LTE: the publisher is killed and returns on the
    /// same key 2 s later. Same session and package, one discontinuity, and every rendition
    /// continues.
    @Test func aPublisherKilledAndBackAfterTwoSecondsContinuesTheShow() async throws {
        let stack = try StorecastStack()
        let key = try await stack.provisionStream(tenant: "shop", stream: "lte")
        try stack.start(packagerArguments: try HlsJsViewer.packagerArguments())
        try await stack.waitUntilReady()
        let first = try Self.publisher(url: stack.rtmpURL(key: key), seconds: 60, logDirectory: stack.logDirectory)
        defer { first.stop(grace: 1) }
        let master = "\(stack.playbackBase)/live/shop/lte/master.m3u8"
        let watcher = try await RenditionWatcher(masterURL: master)
        let viewer = try await HlsJsViewer.watch(stack, stream: "lte")
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
        if let viewer { print("fault matrix, publisher killed and back: \(await viewer.finish("publisher killed and back"))") }
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

    /// kill -9 of the transcoder serving the stream, with a second worker present: the survivor
    /// takes it over from ingest's GOP cache and every rendition goes on.
    @Test func aTranscoderKilledMidShowNeverFreezesARendition() async throws {
        let show = try await Self.watchedShow("worker", seconds: 60, workers: ["worker-a", "worker-b"])
        defer { show.publisher.stop(grace: 1) }
        let (stack, watcher) = (show.stack, show.watcher)
        try await Task.sleep(for: .seconds(6))
        let victim = try #require(try await TranscoderPoolTests.leases(stack, currentOnly: true).first?.workerID)
        let from = watcher.elapsed
        try #require(stack.service(victim)).kill()
        try await Task.sleep(for: .seconds(12))
        let end = watcher.elapsed
        let figures = Self.judge(watcher.stop(), windows: [("transcoder kill -9", from...end, Self.segment)], end: end)
        print("fault matrix, transcoder killed: \(figures.joined(separator: "; "))")
        if let viewer = show.viewer { print("fault matrix, transcoder killed: \(await viewer.finish("transcoder killed"))") }
        let holder = try await TranscoderPoolTests.leases(stack, currentOnly: true).first?.workerID
        #expect(holder != nil && holder != victim, "the other worker holds the stream: \(holder ?? "none")")
        _ = await stack.stop()
    }

    /// The packager killed (-9) or stopped (SIGTERM) mid-show and started again with the same
    /// command line, as systemd or Kubernetes would: the players following the media playlists
    /// they had continue at the new live edge, without an ENDLIST. hls.js on the player page
    /// watches too: after SIGTERM it used to wait for good at the moment of media the stopping
    /// packager took with it.
    @Test(arguments: ["kill -9", "SIGTERM"])
    func aRestartedPackagerContinuesTheShowForItsViewers(_ how: String) async throws {
        let show = try await Self.watchedShow("origin", seconds: 70, player: true)
        defer { show.publisher.stop(grace: 1) }
        let (stack, watcher, master) = (show.stack, show.watcher, show.master)
        try await Task.sleep(for: .seconds(6))
        let packager = try #require(stack.service("storecast-packager"))
        let from = watcher.elapsed
        if how == "kill -9" { packager.kill() } else { packager.stop(grace: 15) }
        let down = watcher.elapsed - from
        try await Task.sleep(for: .seconds(1))  // systemd's RestartSec
        try stack.restart("storecast-packager")
        // Until it has the show again, the restarted packager tells players to retry (503):
        // hls.js gives up on a 404 playlist at once and switches to a rendition whose playlist
        // it read long ago, which it misplaces, and then seeks the video seconds back.
        var answers: [Int] = []
        let back = await StorecastStack.eventually(timeout: .seconds(20)) {
            guard let r = await TestEnvironment.httpGet(master) else { return false }  // not listening yet
            answers.append(r.status)
            return String(decoding: r.body, as: UTF8.self).contains("#EXT-X-STREAM-INF")
        }
        let recovered = watcher.elapsed - from
        #expect(back, "the restarted packager serves the show again:\n\(stack.logs())")
        #expect(!answers.contains(404) && answers.allSatisfy { $0 == 503 || $0 == 200 }, "told to retry, never 404, until the show is back: \(answers)")
        try await Self.expectTheHoleListedAsGaps(master: master)
        try await Task.sleep(for: .seconds(10))
        let end = watcher.elapsed
        let away = down + 1
        let figures = Self.judge(watcher.stop(), windows: [("packager \(how) + restart", from...end, away + Self.segment + 2)], end: end)
        if let viewer = show.viewer { print("fault matrix, packager \(how): \(await viewer.finish("packager \(how)"))") }
        print("fault matrix, packager \(how): stopped in \(String(format: "%.2f", down)) s, master back after \(String(format: "%.2f", recovered)) s; \(figures.joined(separator: "; "))")
        _ = await stack.stop()
    }

    /// Every rendition of a resumed package lists the media lost in the restart as EXT-X-GAP
    /// segments before the new segments' discontinuity, with no hole in the dates: the first new
    /// segment starts where the gap ends, so a player at the hole steps over it.
    static func expectTheHoleListedAsGaps(master: String) async throws {
        let base = master.replacingOccurrences(of: "master.m3u8", with: "")
        let text = await TestEnvironment.httpText(master)
        let renditions = text.split(separator: "\n").filter { $0.hasSuffix(".m3u8") } + text.matches(of: /URI="([^"]+\.m3u8)"/).map { $0.1 }
        #expect(!renditions.isEmpty, "\(text)")
        for uri in renditions {
            var lines: [Substring] = []
            // Gaps are listed with the rendition's first new part; its segment is dated once whole.
            _ = await StorecastStack.eventually(timeout: .seconds(10)) {
                lines = await TestEnvironment.httpText(base + uri).split(separator: "\n")
                guard let last = lines.lastIndex(of: "#EXT-X-GAP") else { return false }
                return lines[last...].contains { $0.hasPrefix("#EXT-X-PROGRAM-DATE-TIME:") }
            }
            let gaps = lines.indices.filter { lines[$0] == "#EXT-X-GAP" }
            let discontinuity = lines.firstIndex(of: "#EXT-X-DISCONTINUITY")
            #expect(!gaps.isEmpty && discontinuity.map { d in gaps.allSatisfy { $0 < d } } == true, "\(uri): gap segments before the new ones:\n\(lines.joined(separator: "\n"))")
            // The dates run on: the last gap's date plus its duration is the next segment's date.
            let iso = ISO8601DateFormatter()
            iso.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            let dates = lines.indices.compactMap { i -> (Int, Double)? in
                lines[i].hasPrefix("#EXT-X-PROGRAM-DATE-TIME:") ? (i, iso.date(from: String(lines[i].dropFirst(25)))?.timeIntervalSince1970 ?? 0) : nil
            }
            if let last = gaps.last, let gapDate = dates.last(where: { $0.0 < last })?.1, let nextDate = dates.first(where: { $0.0 > last })?.1,
               let extinf = Double(lines[last + 1].dropFirst(8).dropLast()) {
                #expect(abs(gapDate + extinf - nextDate) < 0.002, "\(uri): the gap ends where the new media begins: \(gapDate) + \(extinf) against \(nextDate)")
            } else {
                Issue.record("\(uri): dated gap and next segment:\n\(lines.joined(separator: "\n"))")
            }
        }
    }

    /// Resident memory of a process, in MiB (VmRSS).
    static func residentMiB(_ process: ServiceProcess) -> Double {
        let status = (try? String(contentsOfFile: "/proc/\(process.process.processIdentifier)/status", encoding: .utf8)) ?? ""
        let kb = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }?.split(separator: " ").dropFirst().first.flatMap { Double($0) } ?? 0
        return kb / 1024
    }

    /// A consumer that stops reading (SIGSTOP for 20 s): the packager (the transcoder's PUSH
    /// fills to its high-water mark) or the transcoder (ingest's ROUTER fills). Memory of every
    /// other process stays bounded, and the show goes on in every rendition once it reads again.
    @Test(arguments: ["storecast-packager", "storecast-transcoder"])
    func aStuckConsumerKeepsMemoryBoundedAndTheShowComesBack(_ stuck: String) async throws {
        let show = try await Self.watchedShow("stuck", seconds: 90)
        defer { show.publisher.stop(grace: 1) }
        let (stack, watcher) = (show.stack, show.watcher)
        try await Task.sleep(for: .seconds(6))
        let others = ["storecast-ingest", "storecast-transcoder", "storecast-packager"].filter { $0 != stuck }.compactMap { stack.service($0) }
        let before = Dictionary(uniqueKeysWithValues: others.map { ($0.name, Self.residentMiB($0)) })
        var peak = before
        let target = try #require(stack.service(stuck))
        let from = watcher.elapsed
        kill(target.process.processIdentifier, SIGSTOP)
        for _ in 0..<20 {
            try await Task.sleep(for: .seconds(1))
            for p in others { peak[p.name] = max(peak[p.name] ?? 0, Self.residentMiB(p)) }
        }
        kill(target.process.processIdentifier, SIGCONT)
        let resumed = watcher.elapsed
        // The consumer reads 20 s of backlog first (on a loaded CI machine that takes a while);
        // from 6 s after it reads again, every rendition must advance steadily for 6 s.
        let recovered = await StorecastStack.eventually(timeout: .seconds(30)) {
            for p in others { peak[p.name] = max(peak[p.name] ?? 0, Self.residentMiB(p)) }
            return watcher.everyRenditionAdvances(since: resumed + 6, for: 6)
        }
        #expect(recovered, "every rendition advances steadily within 30 s of \(stuck) reading again:\n\(stack.logs())")
        let end = watcher.elapsed
        let growth = peak.map { name, mib in "\(name) \(String(format: "%.0f", before[name] ?? 0)) → \(String(format: "%.0f", mib)) MiB" }.sorted()
        print("fault matrix, \(stuck) stuck 20 s: \(growth.joined(separator: ", "))")
        for (name, mib) in peak {
            #expect(mib - (before[name] ?? 0) < 256, "\(name) stays bounded while \(stuck) does not read: \(growth)")
        }
        // The stall itself is the consumer's silence; then every rendition goes on.
        let figures = Self.judge(watcher.stop(), windows: [("\(stuck) stuck 20 s", from...end, 20 + 2 * Self.segment)], end: end)
        print("fault matrix, \(stuck) stuck 20 s: \(figures.joined(separator: "; "))")
        if let viewer = show.viewer { print("fault matrix, \(stuck) stuck 20 s: \(await viewer.finish("\(stuck) stuck"))") }
        _ = await stack.stop()
    }

    /// PostgreSQL restarted mid-show (5 s down): the live show keeps flowing in every rendition,
    /// the API answers 503 with a JSON error and no database text while it is down, and
    /// recovers by itself. A second show ends while the database is down: its session's end,
    /// its stream's status and its lease's end are written when the database is back (retried,
    /// not lost).
    @Test func postgresRestartedMidShowKeepsTheShowAndTheAPIRecovers() async throws {
        // A 1 s reconnect window: the second show's session ends while the database is still down.
        let show = try await Self.watchedShow("db", seconds: 60, ingestArguments: ["--reconnect-window", "1"])
        defer { show.publisher.stop(grace: 1) }
        let (stack, watcher) = (show.stack, show.watcher)
        let asideKey = try await stack.provisionStream(tenant: "shop", stream: "aside")
        let aside = try EndToEndTests.publisher(url: stack.rtmpURL(key: asideKey), seconds: 60, logDirectory: stack.logDirectory, size: "426x240", name: "ffmpeg-aside")
        defer { aside.stop(grace: 1) }
        let db = PostgresExecutor(conninfo: stack.database)
        defer { db.shutdown() }
        let asideQuery = """
            SELECT s.status, x.ended_at IS NOT NULL AS ended, x.end_reason,
                   (SELECT count(*) FROM transcoder_leases l WHERE l.stream_id = s.id AND l.ended_at IS NULL) AS open_leases,
                   (SELECT count(*) FROM transcoder_leases l WHERE l.stream_id = s.id) AS leases
            FROM streams s JOIN sessions x ON x.stream_id = s.id WHERE s.slug = 'aside' ORDER BY x.id DESC LIMIT 1
            """
        let asideLive = try await StorecastStack.eventually(timeout: .seconds(20)) {
            let r = try await db.execute(asideQuery)
            return r.value(0, "status") == "live" && r.value(0, "open_leases") == "1"
        }
        #expect(asideLive, "the second show is live with a lease:\n\(stack.logs())")
        try await Task.sleep(for: .seconds(4))
        let api = "http://127.0.0.1:\(stack.apiPort)/v1/streams"
        #expect(await TestEnvironment.httpGet(api)?.status == 200)
        let from = watcher.elapsed
        let restart = Task { try await TestEnvironment.restartPostgres(down: .seconds(5)) }
        var answers: [(status: Int, body: String)] = []
        var asideEndedDuringOutage = false
        while !restart.isCancelled, answers.count < 400 {
            if let r = await TestEnvironment.httpGet(api) { answers.append((r.status, String(decoding: r.body, as: UTF8.self))) }
            if !asideEndedDuringOutage, answers.last?.status == 503 {
                aside.stop(grace: 2)  // the seller ends the second show while the database is down
                asideEndedDuringOutage = true
            }
            if answers.count > 4, answers.suffix(1).first?.status == 200, answers.contains(where: { $0.status == 503 }) { break }
            try await Task.sleep(for: .milliseconds(250))
        }
        try await restart.value
        let down = answers.filter { $0.status != 200 }
        #expect(down.contains { $0.status == 503 }, "the API said the database is down: \(answers.map(\.status))")
        #expect(down.allSatisfy { $0.status == 503 && $0.body.contains("\"database_unavailable\"") && !$0.body.localizedCaseInsensitiveContains("server closed") },
                "only 503 with a JSON error and no database text: \(down.map { "\($0.status) \($0.body)" })")
        let recovered = await StorecastStack.eventually(timeout: .seconds(15)) { await TestEnvironment.httpGet(api)?.status == 200 }
        #expect(recovered, "the API recovered by itself")
        print("fault matrix, PostgreSQL restarted: API answers \(answers.map(\.status)) (every 250 ms)")
        try await Task.sleep(for: .seconds(6))
        let end = watcher.elapsed
        let figures = Self.judge(watcher.stop(), windows: [("PostgreSQL restarted (5 s down)", from...end, Self.segment)], end: end)
        print("fault matrix, PostgreSQL restarted: \(figures.joined(separator: "; "))")
        if let viewer = show.viewer { print("fault matrix, PostgreSQL restarted: \(await viewer.finish("PostgreSQL restarted"))") }

        // What ingest recorded while the database was down reached it once it was back.
        #expect(asideEndedDuringOutage)
        var row = ""
        let written = await StorecastStack.eventually(timeout: .seconds(20)) {
            // The test's own connection died with the server: the first query reconnects.
            guard let r = try? await db.execute(asideQuery) else { return false }
            row = "status \(r.value(0, "status") ?? "?"), session ended \(r.value(0, "ended") ?? "?") (\(r.value(0, "end_reason") ?? "-")), open leases \(r.value(0, "open_leases") ?? "?") of \(r.value(0, "leases") ?? "?")"
            return r.value(0, "status") == "ended" && r.value(0, "ended") == "t" && r.value(0, "open_leases") == "0"
        }
        #expect(written, "the second show's end, written after the outage: \(row)\n\(stack.logs())")
        var retried = ""
        let counted = await StorecastStack.eventually(timeout: .seconds(10)) {
            let text = await TestEnvironment.httpText("http://127.0.0.1:\(stack.metricsPort)/metrics")
            retried = text.split(separator: "\n").filter { $0.hasPrefix("storecast_database_writes_retried_total{") && $0.contains("service=\"ingest\"") }.joined(separator: "; ")
            return retried.contains("what=\"session end\"") && retried.contains("what=\"lease end\"")
        }
        #expect(counted, "ingest retried the session's end and the lease's end after the outage: \(retried)")
        print("fault matrix, PostgreSQL restarted: the show that ended during the outage: \(row); retried: \(retried)")
        _ = await stack.stop()
    }

    // MARK: Faults in what the publisher sends (a scripted real-time publisher: 720p H.264 with
    // a keyframe every second, AAC; ffmpeg cannot send these faults as a phone does).

    typealias Frame = ScriptedPublisher.Frame

    static func isSequenceHeader(_ f: Frame) -> Bool { f.payload.count > 1 && f.payload[1] == 0 }

    /// Publishes `frames` in real time on a thread while every rendition is watched; stops
    /// watching 2 s before the publisher's last frame (the show is still live), then judges.
    static func watchScriptedShow(_ name: String, frames: [Frame], bound: Double) async throws {
        let stack = try StorecastStack()
        let key = try await stack.provisionStream(tenant: "shop", stream: "scripted")
        try stack.start(packagerArguments: try HlsJsViewer.packagerArguments())
        try await stack.waitUntilReady()
        let viewer = try await HlsJsViewer.watch(stack, stream: "scripted")  // opened before the show, as a waiting shopper
        let started = ContinuousClock.now
        let publishing = Task { try await ScriptedPublisher.run(port: stack.rtmpPort, key: key, frames: frames) }
        let watcher = try await RenditionWatcher(masterURL: "\(stack.playbackBase)/live/shop/scripted/master.m3u8")
        #expect(watcher.renditions.count == 4, "720p, 480p, 360p and audio: \(watcher.renditions)")
        let from = watcher.elapsed
        let last = Double(frames.map { $0.sendAt ?? $0.timestamp }.max() ?? 0) / 1000
        try await Task.sleep(until: started + .seconds(last - 2))
        let end = watcher.elapsed
        let timelines = watcher.stop()
        let figures = Self.judge(timelines, windows: [(name, from...end, bound)], end: end)
        print("fault matrix, \(name): \(figures.joined(separator: "; "))")
        if let viewer { print("fault matrix, \(name): \(await viewer.finish(name))") }
        try await publishing.value
        _ = await stack.stop()
    }

    /// The publisher's clock jumps back 5 s, jumps forward an hour, or wraps at 2^32 ms, 12 s
    /// into a 24 s show. Before, a jump back held every frame at one time until the clock caught
    /// up (5 s of video the encoders dropped: every rung froze).
    @Test(arguments: ["jumps back 5 s", "jumps forward 1 h", "wraps at 2^32 ms"])
    func publisherClockFaultsNeverFreezeARendition(_ fault: String) async throws {
        let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("scripted-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let half = ScriptedMedia.interleave(try await ScriptedMedia.h264(width: 1280, height: 720, seconds: 12, directory: directory),
                                            try await ScriptedMedia.aac(seconds: 12, directory: directory))
        let media = half.filter { !Self.isSequenceHeader($0) }
        var frames: [Frame]
        switch fault {
        case "jumps back 5 s":
            frames = half + media.map { Frame(timestamp: $0.timestamp + 7_000, payload: $0.payload, isVideo: $0.isVideo, sendAt: $0.timestamp + 12_000) }
        case "jumps forward 1 h":
            frames = half + media.map { Frame(timestamp: $0.timestamp + 3_612_000, payload: $0.payload, isVideo: $0.isVideo, sendAt: $0.timestamp + 12_000) }
        default:
            // The whole show on a clock that wraps 12 s in.
            let base = UInt32.max - 11_999
            frames = (half + ScriptedMedia.shifted(media, by: 12_000)).map {
                Frame(timestamp: $0.timestamp &+ base, payload: $0.payload, isVideo: $0.isVideo, sendAt: $0.timestamp)
            }
        }
        try await Self.watchScriptedShow("clock \(fault)", frames: frames, bound: Self.segment)
    }

    /// The seller's app goes to the background: video stops for 5 s while audio goes on. The
    /// slate keeps every video rendition advancing from 1 s after the last frame.
    @Test func aVideoGapIsBridgedInEveryRendition() async throws {
        let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("scripted-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let video = try await ScriptedMedia.h264(width: 1280, height: 720, seconds: 10, directory: directory)
        let back = ScriptedMedia.shifted(video.filter { !Self.isSequenceHeader($0) }, by: 15_000)
        let frames = ScriptedMedia.interleave(video + back, try await ScriptedMedia.aac(seconds: 25, directory: directory))
        try await Self.watchScriptedShow("video gap 5 s", frames: frames, bound: 1 + Self.segment)
    }
}
