import Foundation
import StorecastRuntime
import Testing

/// The packager's HTTPS listener (issue 18): HTTP/2 over TLS, chosen by ALPN, with HTTP/1.1 kept
/// there and on the plain port. Two hls.js players on one page of another origin (the feed's
/// case: the show on screen and the next one) both play at LL-HLS latency over HTTP/2, on one
/// connection where HTTP/1.1 would take up to Chromium's 6 per host for their blocking reloads and
/// streamed parts. A peer that never finishes its TLS handshake is closed at the idle deadline.
@Suite(.serialized) struct HTTP2PlaybackTests {
    static func twoPlayersPage(origin: String, streams: [String]) -> String {
        """
        <!doctype html><html><body>
        <video id="v0" muted autoplay playsinline></video><video id="v1" muted autoplay playsinline></video>
        <script>window.pageErrors = []; window.addEventListener('error', e => window.pageErrors.push(String(e.message)));</script>
        <script src="\(origin)/assets/hls.js"></script>
        <script>
        (() => {
            const streams = [\(streams.map { "'\(origin)/live/\($0)/master.m3u8'" }.joined(separator: ", "))];
            window.players = streams.map((url, i) => {
                const video = document.getElementById('v' + i);
                const p = { video, hls: new Hls({ lowLatencyMode: true, maxLiveSyncPlaybackRate: 1.5 }), fatal: [], errors: [], stalls: 0, playing: false };
                p.hls.on(Hls.Events.ERROR, (e, d) => {
                    const text = d.details + ' ' + (d.response ? d.response.code : '') + ' ' + (d.error ? d.error.message : '') + ' ' + (d.frag ? d.frag.relurl : '') + ' at ' + Math.round(performance.now());
                    if (d.fatal) p.fatal.push(text); else p.errors.push(text);
                });
                video.addEventListener('playing', () => { p.playing = true; });
                video.addEventListener('waiting', () => { if (p.playing) p.stalls++; });
                p.hls.loadSource(url);
                p.hls.attachMedia(video);
                return p;
            });
            window.sample = () => JSON.stringify({
                players: window.players.map(p => ({ time: p.video.currentTime, latency: p.hls.latency, target: p.hls.targetLatency,
                                                   stalls: p.stalls, fatal: p.fatal, playing: p.playing, errors: p.errors.slice(-8),
                                                   buffered: Array.from({ length: p.video.buffered.length }, (_, i) => [p.video.buffered.start(i), p.video.buffered.end(i)]),
                                                   readyState: p.video.readyState })),
                protocols: performance.getEntriesByType('resource').filter(e => e.name.startsWith('\(origin)/live/'))
                    .reduce((m, e) => { m[e.nextHopProtocol || '?'] = (m[e.nextHopProtocol || '?'] || 0) + 1; return m; }, {}),
                unknown: performance.getEntriesByType('resource').filter(e => e.name.startsWith('\(origin)/live/') && !e.nextHopProtocol)
                    .map(e => `${e.name.replace('\(origin)', '')} status ${e.responseStatus} ${Math.round(e.duration)} ms`),
                errors: window.pageErrors });
        })();
        </script></body></html>
        """
    }

    @Test func twoPlayersOnOnePagePlayAtLowLatencyOverHTTP2() async throws {
        let stack = try StorecastStack()
        var keys: [String: String] = [:]
        for show in ["left", "right"] { keys[show] = try await stack.provisionStream(tenant: "shop", stream: show) }
        let pair = try SelfSignedCertificate.ensure(in: stack.logDirectory.appendingPathComponent("tls").path)
        #expect((try FileManager.default.attributesOfItem(atPath: pair.key)[.posixPermissions] as? Int) == 0o600, "the private key is its owner's only")
        let httpsPort = try TestEnvironment.freePort()
        try stack.start(packagerArguments: ["--hlsjs-file", try TestEnvironment.testTool("hls.js").path, "--http-idle-timeout", "3",
                                            "--https-port", "\(httpsPort)", "--tls-certificate", pair.certificate, "--tls-key", pair.key])
        try await stack.waitUntilReady()
        let origin = "https://127.0.0.1:\(httpsPort)"

        // ALPN: HTTP/2 where the client offers it, HTTP/1.1 where it does not; plain HTTP/1.1 stays.
        let curl = try TestEnvironment.which("curl")
        for (flag, version) in [("--http2", "2"), ("--http1.1", "1.1")] {
            let (status, output) = try await ServiceProcess.run(curl, ["-sk", flag, "-o", "/dev/null", "-w", "%{http_version} %{http_code}", "\(origin)/healthz"])
            #expect(status == 0 && output == "\(version) 200", "\(flag): \(output)")
        }
        #expect(await TestEnvironment.httpGet("http://127.0.0.1:\(stack.httpPort)/healthz")?.status == 200)

        // A peer that starts a handshake and never finishes it is closed at the deadline (3 s).
        let stalled = try HostilePeer.Connection(port: httpsPort)
        stalled.write([0x16, 0x03, 0x01, 0x02, 0x00, 0x01])  // a ClientHello's record header, then nothing
        #expect(stalled.closedByServer(within: 8), "a handshake that never completes is closed")

        var publishers: [ServiceProcess] = []
        defer { publishers.forEach { $0.stop(grace: 1) } }
        for show in ["left", "right"] {
            publishers.append(try EndToEndTests.publisher(url: stack.rtmpURL(key: keys[show]!), seconds: 60, logDirectory: stack.logDirectory, size: "426x240", name: "publisher-\(show)"))
        }
        // Both shows on (their multivariant playlists answer) before the page opens, as in a feed.
        for show in ["left", "right"] {
            let on = await StorecastStack.eventually(timeout: .seconds(30)) {
                (try? await ServiceProcess.run(curl, ["-sk", "--http2", "-o", "/dev/null", "-w", "%{http_code}", "\(origin)/live/shop/\(show)/master.m3u8"]))?.output == "200"
            }
            #expect(on, "\(show) never went live:\n\(stack.logs())")
        }
        // The shows are on when the shopper arrives (as in the feed), past their first segments.
        try await Task.sleep(for: .seconds(3))
        let (nginx, _, shopPort) = try await CachedCrossOriginPlaybackTests.startCache(for: stack)
        defer { nginx.stop(grace: 2) }
        try Data(Self.twoPlayersPage(origin: origin, streams: ["shop/left", "shop/right"]).utf8)
            .write(to: stack.logDirectory.appendingPathComponent("shop/two.html"))

        let browser = try await WebDriverSession(logDirectory: stack.logDirectory, acceptInsecureCerts: true)
        defer { Task { await browser.close() } }
        try await browser.navigate("http://127.0.0.1:\(shopPort)/two.html")
        _ = try await browser.evaluate("performance.setResourceTimingBufferSize(1000000); return true")
        func sample() async -> [String: Any] {
            let json = (try? await browser.evaluate("return window.sample ? window.sample() : '{}'")) as? String ?? "{}"
            return (try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]) ?? [:]
        }
        func players(_ s: [String: Any]) -> [[String: Any]] { s["players"] as? [[String: Any]] ?? [] }
        let playing = await StorecastStack.eventually(timeout: .seconds(30)) {
            let p = players(await sample())
            return p.count == 2 && p.allSatisfy { ($0["playing"] as? Bool) == true }
        }
        let started = await sample()
        #expect(playing, "both players play: \(started)\n\(stack.logs())")
        // Both for 15 s, side by side: each advances, keeps LL latency, and never stalls.
        let first = players(await sample())
        var latencies: [[Double]] = [[], []]
        for _ in 0..<15 {
            try await Task.sleep(for: .seconds(1))
            for (i, p) in players(await sample()).enumerated() where i < 2 { latencies[i].append((p["latency"] as? Double) ?? 99) }
        }
        let last = await sample()
        for (i, p) in players(last).enumerated() {
            let advanced = ((p["time"] as? Double) ?? 0) - ((first[safe: i]?["time"] as? Double) ?? 0)
            let sorted = latencies[i].suffix(10).sorted()  // after 5 s of catching up from where it started
            let p50 = sorted.isEmpty ? 99 : sorted[sorted.count / 2]
            print("HTTP2PlaybackTests: player \(i) advanced \(String(format: "%.1f", advanced)) s in 15 s; hls.js latency p50 over the last 10 s \(String(format: "%.2f", p50)) s, max \(String(format: "%.2f", sorted.last ?? 99)) s, target \(p["target"] ?? "?"); stalls \(p["stalls"] ?? "?") \(latencies[i])")
            #expect(advanced >= 13, "player \(i) kept playing: \(advanced) s of 15")
            #expect(p50 <= 1.5, "player \(i) at LL-HLS latency (target 0.6 s): p50 \(p50), \(latencies[i])")
            #expect((p["stalls"] as? Int) == 0 && (p["fatal"] as? [String] ?? ["?"]).isEmpty, "player \(i): \(p)")
            if advanced < 13 || p50 > 1.5 {
                print("HTTP2PlaybackTests: player \(i) at the end: \(p)\npackager:\n\(stack.service("storecast-packager")?.log.suffix(3000) ?? "")\ntranscoder:\n\(stack.service("storecast-transcoder")?.log.suffix(2000) ?? "")")
            }
        }
        let protocols = last["protocols"] as? [String: Int] ?? [:]
        print("HTTP2PlaybackTests: the players' requests by protocol: \(protocols)")
        // A request the player cancelled (hls.js aborts a part or a blocking reload it no longer
        // needs) has no protocol in resource timing: one in seven runs had one, among about 800.
        #expect((protocols["h2"] ?? 0) > 50 && protocols.keys.allSatisfy { $0 == "h2" || $0 == "?" } && (protocols["?"] ?? 0) <= 2,
                "every media request over HTTP/2, but for two cancelled at most: \(protocols) \(last["unknown"] ?? "")")
        #expect((last["errors"] as? [String] ?? ["?"]).isEmpty, "\(last)")
    }

    /// The feed's own case over HTTP/2: the feed page (through the caching proxy, another origin)
    /// lists shows whose packager is reached over HTTPS (its `--public-url`), so the show on
    /// screen plays and the next one preloads over one HTTP/2 connection. The show on screen keeps
    /// LL-HLS latency with no stall; a swipe plays the preloaded show, which then keeps LL-HLS
    /// latency too; every media request of the page is HTTP/2, both shows' among them.
    @Test func theFeedsPlayersPlayAtLowLatencyOverHTTP2() async throws {
        let stack = try StorecastStack()
        var keys: [String: String] = [:]
        for show in ["alpha", "bravo"] { keys[show] = try await stack.provisionStream(tenant: "shop", stream: show) }
        let pair = try SelfSignedCertificate.ensure(in: stack.logDirectory.appendingPathComponent("tls").path)
        let httpsPort = try TestEnvironment.freePort()
        let origin = "https://127.0.0.1:\(httpsPort)", api = "http://127.0.0.1:\(stack.apiPort)"
        try stack.start(packagerArguments: ["--events-url", api, "--hlsjs-file", try TestEnvironment.testTool("hls.js").path, "--public-url", origin,
                                            "--https-port", "\(httpsPort)", "--tls-certificate", pair.certificate, "--tls-key", pair.key])
        try await stack.waitUntilReady()
        let (nginx, cdn, _) = try await CachedCrossOriginPlaybackTests.startCache(for: stack)
        defer { nginx.stop(grace: 2) }
        let pinned = await TestEnvironment.http("PATCH", "\(api)/v1/tenants/shop/streams/alpha", json: #"{"pinned":true}"#)
        #expect(pinned?.status == 200, "pinning alpha: \(TestEnvironment.describe(pinned))")
        // Published at once: ingest reads the registered packagers every 2 s, so the shows may be
        // placed on its default packager before it knows this one is registered. Once it is, the
        // show's origin is recorded (LeaseScheduler's packagerRegistered), and the feed lists the
        // HTTPS origin; before that fix such a show played from the API's plain playback base
        // for its whole session.
        var publishers: [ServiceProcess] = []
        defer { publishers.forEach { $0.stop(grace: 1) } }
        for show in ["alpha", "bravo"] {
            publishers.append(try EndToEndTests.publisher(url: stack.rtmpURL(key: keys[show]!), seconds: 60, logDirectory: stack.logDirectory, size: "426x240", name: "publisher-\(show)"))
        }
        // Both shows listed, their playback under the packager's HTTPS origin.
        var feed = ""
        let listed = await StorecastStack.eventually(timeout: .seconds(30)) {
            feed = String(decoding: await TestEnvironment.httpGet("\(api)/v1/feed/shop")?.body ?? [], as: UTF8.self)
            return feed.matches(of: /"playbackUrl":"https:\\\/\\\/127\.0\.0\.1:\d+\\\/live\\\/shop\\\/(alpha|bravo)\\\/master\.m3u8"/).count == 2
        }
        #expect(listed, "both shows in the feed, played from \(origin): \(feed)")
        let placements = (stack.service("storecast-ingest")?.log ?? "").split(separator: "\n").filter { $0.contains("packager") && !$0.contains("packagers") }
        print("HTTP2PlaybackTests: how ingest placed the shows:\n\(placements.joined(separator: "\n"))")
        try await Task.sleep(for: .seconds(3))

        let browser = try await WebDriverSession(logDirectory: stack.logDirectory, acceptInsecureCerts: true)
        defer { Task { await browser.close() } }
        try await browser.navigate("\(cdn)/feed/shop")
        _ = try await browser.evaluate("performance.setResourceTimingBufferSize(1000000); return true")
        func state() async -> [String: Any] {
            let json = (try? await browser.evaluate("""
                const f = window.storecastFeed; if (!f) return '{}';
                const player = (s) => { const v = f.videoOf(s), h = f.hlsOf(s); return v && h ? { time: v.currentTime, paused: v.paused, latency: h.latency, stalls: v.storecastStalls || 0 } : null; };
                for (const s of f.players()) {  // stalls: a wait once the video has played, not its start
                    const v = f.videoOf(s);
                    if (v && v.storecastStalls === undefined) {
                        v.storecastStalls = 0; v.storecastPlayed = false;
                        v.addEventListener('playing', () => { v.storecastPlayed = true; });
                        v.addEventListener('waiting', () => { if (v.storecastPlayed && !v.paused) v.storecastStalls++; });
                    }
                }
                const protocols = {};
                for (const e of performance.getEntriesByType('resource')) {
                    const m = e.name.match(/\\/live\\/shop\\/([a-z]+)\\//); if (!m || !e.name.startsWith('\(origin)/')) continue;
                    const k = m[1] + ' ' + (e.nextHopProtocol || '?'); protocols[k] = (protocols[k] || 0) + 1;
                }
                return JSON.stringify({ players: f.players(), maxPlayers: f.maxPlayers, swipes: f.swipes, errors: f.errors, alpha: player('alpha'), bravo: player('bravo'), protocols });
                """)) as? String ?? "{}"
            return (try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]) ?? [:]
        }
        // The show on screen plays; the next one is preloaded.
        var s: [String: Any] = [:]
        let loaded = await StorecastStack.eventually(timeout: .seconds(30)) {
            s = await state()
            return (s["players"] as? [String]) == ["alpha", "bravo"] && ((s["alpha"] as? [String: Any])?["time"] as? Double ?? 0) > 1
        }
        #expect(loaded, "alpha plays and bravo is preloaded: \(s)\n\(stack.logs())")
        /// Ten seconds of the show on screen: it advances, keeps LL-HLS latency and never stalls.
        func watch(_ show: String) async throws -> (advanced: Double, p50: Double, stalls: Int, latencies: [Double]) {
            let before = await state()[show] as? [String: Any] ?? [:]
            let first = before["time"] as? Double ?? 0, stallsBefore = before["stalls"] as? Int ?? 0
            var latencies: [Double] = []
            for _ in 0..<10 {
                try await Task.sleep(for: .seconds(1))
                latencies.append(((await state()[show] as? [String: Any])?["latency"] as? Double) ?? 99)
            }
            let last = await state()[show] as? [String: Any] ?? [:]
            let sorted = latencies.sorted()
            return ((last["time"] as? Double ?? 0) - first, sorted[sorted.count / 2], (last["stalls"] as? Int ?? 99) - stallsBefore, latencies)
        }
        let alpha = try await watch("alpha")
        print("HTTP2PlaybackTests: the feed over HTTP/2: alpha advanced \(String(format: "%.1f", alpha.advanced)) s in 10 s, hls.js latency p50 \(String(format: "%.2f", alpha.p50)) s, stalls \(alpha.stalls) \(alpha.latencies)")
        #expect(alpha.advanced >= 8.5 && alpha.p50 <= 1.5 && alpha.stalls == 0, "alpha plays at LL-HLS latency over HTTP/2: \(alpha)")
        s = await state()
        #expect((s["bravo"] as? [String: Any])?["paused"] as? Bool == true, "bravo waits, preloaded and paused: \(s)")

        _ = try await browser.evaluate("dispatchEvent(new KeyboardEvent('keydown', { key: 'ArrowDown' })); return true")
        let swiped = await StorecastStack.eventually(timeout: .seconds(10)) {
            s = await state()
            return (s["swipes"] as? [[String: Any]] ?? []).count == 1 && (s["players"] as? [String]) == ["bravo"]
        }
        #expect(swiped, "a swipe plays bravo: \(s)")
        let swipe = (s["swipes"] as? [[String: Any]])?.first ?? [:]
        print("HTTP2PlaybackTests: the feed over HTTP/2: swipe to \(swipe["to"] ?? "?"): first frame \(Int((swipe["ms"] as? Double ?? -1).rounded())) ms after the swipe, \(String(format: "%.2f", swipe["behind"] as? Double ?? -1)) s behind the live edge")
        // bravo waited preloaded for more than 10 s (11.4 s behind when it was left where it
        // was preloaded): its first frame is still the live show's, within about 2 s.
        #expect((swipe["behind"] as? Double ?? 99) < 3, "the first frame after the swipe is live: \(swipe)")
        try await Task.sleep(for: .seconds(3))  // hls.js's own catch-up to its target after the start
        let bravo = try await watch("bravo")
        print("HTTP2PlaybackTests: the feed over HTTP/2: bravo advanced \(String(format: "%.1f", bravo.advanced)) s in 10 s, hls.js latency p50 \(String(format: "%.2f", bravo.p50)) s, stalls \(bravo.stalls) \(bravo.latencies)")
        // A show started from up to about 2 s behind catches up at up to 1.5x; one run in five
        // stalled twice doing so (issue 18's note), so up to 2 are let through here, and printed.
        #expect(bravo.advanced >= 8.5 && bravo.p50 <= 1.5 && bravo.stalls <= 2, "bravo plays at LL-HLS latency over HTTP/2 after the swipe: \(bravo)")

        s = await state()
        let protocols = s["protocols"] as? [String: Int] ?? [:]
        print("HTTP2PlaybackTests: the feed's media requests by show and protocol: \(protocols)")
        // (A request cancelled when its player was destroyed has no protocol in resource timing.)
        #expect((protocols["alpha h2"] ?? 0) > 20 && (protocols["bravo h2"] ?? 0) > 20 && protocols.keys.allSatisfy { $0.hasSuffix(" h2") || $0.hasSuffix(" ?") },
                "both shows' media over HTTP/2, and nothing else: \(protocols)")
        #expect((s["maxPlayers"] as? Int ?? 99) <= 2 && (s["errors"] as? Int ?? 99) == 0, "\(s)")
        await browser.close()
        _ = await stack.stop()
    }

    /// A certificate or key that cannot be used stops the packager at start, naming the file
    /// and what to give instead; half a pair is refused as a usage error.
    @Test(arguments: [
        ("missing certificate", ["--tls-certificate", "/nonexistent/cert.pem", "--tls-key", "KEY"], "cannot read the TLS certificate chain /nonexistent/cert.pem"),
        ("a key that is not the certificate's", ["--tls-certificate", "CERT", "--tls-key", "OTHERKEY"], "do not make a server context"),
        ("a key without a certificate", ["--tls-key", "KEY"], "HTTPS needs both --tls-certificate and --tls-key"),
    ])
    func unusableTLSFilesStopThePackagerWithWhatToFix(_ row: (name: String, arguments: [String], message: String)) async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("storecast-tls-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: dir) }
        let pair = try SelfSignedCertificate.ensure(in: dir.appendingPathComponent("a").path)
        let other = try SelfSignedCertificate.ensure(in: dir.appendingPathComponent("b").path)
        let arguments = row.arguments.map { ["CERT": pair.certificate, "KEY": pair.key, "OTHERKEY": other.key][$0] ?? $0 }
        let (pull, http, https) = (try TestEnvironment.freePort(), try TestEnvironment.freePort(), try TestEnvironment.freePort())
        let (status, output) = try await ServiceProcess.run(try TestEnvironment.binary("storecast-packager"), [
            "--pull-endpoint", "tcp://127.0.0.1:\(pull)", "--http-host", "127.0.0.1", "--http-port", "\(http)", "--https-port", "\(https)",
            "--zmq-keys", TestEnvironment.zmqKeys, "--recordings-dir", dir.appendingPathComponent("rec").path,
        ] + arguments, timeout: 20)
        #expect(status != 0 && status != -1, "\(row.name): the packager stops (\(status))")
        #expect(output.contains(row.message), "\(row.name): \(output.suffix(1500))")
    }
}

private extension Array {
    subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}
