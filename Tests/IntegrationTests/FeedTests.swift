import Foundation
import Testing

/// The shoppers' stories feed from their side (issue 18): three live shows, the feed page loaded
/// through a caching proxy (nginx, as a CDN) in headless Chromium with hls.js. The blurred
/// placeholder paints first; a swipe plays the next show, which was preloaded; never more than two
/// players are alive, and a show swiped away makes no request of its own 200 ms after; a show
/// that ends drops out without a reload.
@Suite(.serialized) struct FeedTests {
    @Test func aShopperSwipesThroughLiveShows() async throws {
        let stack = try StorecastStack()
        var keys: [String: String] = [:]
        for show in ["alpha", "bravo", "charlie"] { keys[show] = try await stack.provisionStream(tenant: "shop", stream: show) }
        let api = "http://127.0.0.1:\(stack.apiPort)"
        try stack.start(packagerArguments: ["--events-url", api, "--hlsjs-file", try TestEnvironment.testTool("hls.js").path])
        try await stack.waitUntilReady()
        let (nginx, cdn, _) = try await CachedCrossOriginPlaybackTests.startCache(for: stack)
        defer { nginx.stop(grace: 2) }

        // Pinned first, then by start time (newest first): alpha, then charlie, then bravo.
        let pinned = await TestEnvironment.http("PATCH", "\(api)/v1/tenants/shop/streams/alpha", json: #"{"pinned":true}"#)
        #expect(pinned?.status == 200, "pinning alpha: \(TestEnvironment.describe(pinned))")
        #expect(await TestEnvironment.http("PUT", "\(api)/v1/tenants/shop/feed-settings", json: #"{"order":"started"}"#)?.status == 200)
        var publishers: [String: ServiceProcess] = [:]
        for show in ["alpha", "bravo", "charlie"] {
            publishers[show] = try EndToEndTests.publisher(url: stack.rtmpURL(key: keys[show]!), seconds: 60,
                                                           logDirectory: stack.logDirectory, size: "426x240", name: "publisher-\(show)")
            try await Task.sleep(for: .milliseconds(1500))
        }
        defer { publishers.values.forEach { $0.stop(grace: 1) } }
        // Each live show's packager writes its placeholder within about 5 s of its first still.
        var feed = ""
        let ready = await StorecastStack.eventually(timeout: .seconds(30)) {
            feed = String(decoding: await TestEnvironment.httpGet("\(api)/v1/feed/shop")?.body ?? [], as: UTF8.self)
            return feed.matches(of: /"placeholder":"data:image\\\/jpeg;base64,[A-Za-z0-9+\\\/=]+"/).count == 3
        }
        #expect(ready, "three shows, each with its placeholder: \(feed)")
        #expect(feed.matches(of: /"stream":"([a-z]+)"/).map { String($0.1) } == ["alpha", "charlie", "bravo"], "\(feed)")
        if let encoded = feed.firstMatch(of: /"placeholder":"data:image\\\/jpeg;base64,([^"]+)"/)?.1,
           let bytes = Data(base64Encoded: String(encoded).replacingOccurrences(of: "\\/", with: "/")) {
            print("FeedTests: a placeholder is \(bytes.count) bytes of JPEG")
            #expect(bytes.starts(with: [0xFF, 0xD8]) && bytes.count <= 2048, "a JPEG of a few hundred bytes: \(bytes.count)")
        }

        let browser = try await WebDriverSession(logDirectory: stack.logDirectory)
        try await browser.navigate("\(cdn)/feed/shop")
        // Every request the page makes is kept (250 by default), to see when each player's stop.
        _ = try await browser.evaluate("performance.setResourceTimingBufferSize(1000000); return true")
        func state() async -> [String: Any] {
            let json = (try? await browser.evaluate("""
                const f = window.storecastFeed; if (!f) return '{}';
                const blur = document.querySelector('.slide .blur');
                const entries = performance.getEntriesByType('resource').map(e => ({ url: e.name, start: e.startTime }));
                return JSON.stringify({ shows: f.shows(), players: f.players(), maxPlayers: f.maxPlayers, swipes: f.swipes, destroyed: f.destroyed,
                    videos: document.querySelectorAll('video').length, placeholder: blur ? blur.src.slice(0, 22) : '', entries });
                """)) as? String ?? "{}"
            return (try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]) ?? [:]
        }
        // Loaded: alpha has played 2 s and charlie, preloaded once alpha showed its first frame,
        // has media buffered. The card below is posted then, not while both players start.
        let loaded = await StorecastStack.eventually(timeout: .seconds(20)) {
            let s = await state()
            guard (s["players"] as? [String]) == ["alpha", "charlie"] else { return false }
            let ready = try? await browser.evaluate("""
                const f = window.storecastFeed, a = f.videoOf('alpha'), c = f.videoOf('charlie');
                return !!(a && c && a.currentTime > 2 && c.buffered.length > 0);
                """) as? Bool
            return ready == true
        }
        var s = await state()
        #expect(loaded, "the first show plays and the next one is preloaded: \(s)")
        #expect(s["placeholder"] as? String == "data:image/jpeg;base64", "the placeholder paints from the feed itself: \(s["placeholder"] ?? "")")
        // The test's own record of alpha's frames (each frame callback's media time, and the card
        // the page's lookup finds there) beside the page's, to tell a late card's cause: frame
        // callbacks that did not come, or a lookup that missed the cue.
        _ = try await browser.evaluate("""
            const v = window.storecastFeed.videoOf('alpha'), log = window.storecastTestFrames = [];
            const onFrame = (now, meta) => {
              const c = window.storecastFeed.cardAt(v, meta.mediaTime), cues = [...v.textTracks].map(t => t.cues ? t.cues.length : -1).join('/');
              log.push([Math.round(now), meta.mediaTime, meta.presentedFrames, c ? c.id : null, cues]);
              if (log.length > 400) log.shift();
              v.requestVideoFrameCallback(onFrame);
            };
            v.requestVideoFrameCallback(onFrame);
            return true
            """)
        // A product card posted through the API while alpha plays: its slide shows it, with its
        // image and link, on the frame it belongs to.
        let card = try #require(await TestEnvironment.http("POST", "\(api)/v1/tenants/shop/streams/alpha/highlights", json: #"""
            {"productId":"sku-7","title":"Red kettle","price":"39.00","currency":"EUR","imageUrl":"https://shop.example/kettle.jpg","link":"https://shop.example/p/sku-7"}
            """#))
        let cardID = try #require(String(decoding: card.body, as: UTF8.self).firstMatch(of: /"id":(\d+)/).map { "highlight-\($0.1)" }, "\(card.status)")
        var shownCard: [String: Any] = [:]
        let cardShown = await StorecastStack.eventually(timeout: .seconds(15)) {
            let json = (try? await browser.evaluate("""
                const el = document.querySelector('.slide[data-stream="alpha"] .card');
                const seen = window.storecastFeed.cards.find(c => c.stream === 'alpha' && c.id === '\(cardID)');
                return JSON.stringify(el ? { id: el.dataset.card, title: el.querySelector('.title').textContent, price: el.querySelector('.price').textContent,
                    image: el.querySelector('img').getAttribute('src'), link: el.querySelector('a').getAttribute('href'), seen } : {});
                """)) as? String ?? "{}"
            shownCard = (try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]) ?? [:]
            return shownCard["seen"] != nil
        }
        #expect(cardShown && shownCard["id"] as? String == cardID && shownCard["title"] as? String == "Red kettle" && shownCard["price"] as? String == "39.00 EUR",
                "alpha's slide shows the card: \(shownCard)")
        #expect(shownCard["image"] as? String == "https://shop.example/kettle.jpg" && shownCard["link"] as? String == "https://shop.example/p/sku-7", "with its image and link: \(shownCard)")
        let seen = shownCard["seen"] as? [String: Any] ?? [:]
        let (start, time) = (seen["start"] as? Double ?? .nan, seen["mediaTime"] as? Double ?? .nan)
        print("FeedTests: the card showed on the frame \(Int(((time - start) * 1000).rounded())) ms after its start")
        // Shown on the first frame its cue holds (a late cue would be a late card), not before it.
        if !(-0.05...1).contains(time - start) {
            let frames = (try? await browser.evaluate("return JSON.stringify(window.storecastTestFrames)")) as? String ?? "?"
            Issue.record("the card comes with its frame: \(seen); alpha's frames [time, media time, presented, card found, cues per track]: \(frames)")
        }
        try await Task.sleep(for: .seconds(3))
        // Two swipes down, as a shopper makes them (a key on a desktop, then a touch swipe),
        // each measured from the swipe to the next show's first frame.
        _ = try await browser.evaluate("dispatchEvent(new KeyboardEvent('keydown', { key: 'ArrowDown' })); return true")
        try await Task.sleep(for: .seconds(3))
        _ = try await browser.evaluate("""
            const at = (y) => [new Touch({ identifier: 1, target: document.body, clientX: 100, clientY: y })];
            dispatchEvent(new TouchEvent('touchstart', { touches: at(500), changedTouches: at(500) }));
            dispatchEvent(new TouchEvent('touchend', { touches: [], changedTouches: at(300) }));
            return true
            """)
        try await Task.sleep(for: .seconds(3))
        s = await state()
        let swipes = s["swipes"] as? [[String: Any]] ?? []
        #expect(swipes.map { $0["to"] as? String ?? "" } == ["charlie", "bravo"], "\(swipes)")
        for swipe in swipes {
            print("FeedTests: swipe to \(swipe["to"] ?? "?"): first frame \(Int((swipe["ms"] as? Double ?? -1).rounded())) ms after the swipe, \(String(format: "%.2f", swipe["behind"] as? Double ?? -1)) s behind the live edge")
            // The preloaded show was kept at the live edge while it waited (seconds here), so its
            // first frame is the show as it is now, not as it was when it was preloaded.
            #expect((swipe["behind"] as? Double ?? 99) < 3, "the first frame after a swipe is live: \(swipe)")
        }
        #expect((s["maxPlayers"] as? Int ?? 99) <= 2 && (s["videos"] as? Int ?? 99) <= 2, "never more than two players: \(s["maxPlayers"] ?? "?")")
        #expect(s["players"] as? [String] == ["bravo"], "at the last show, only its player: \(s["players"] ?? "?")")
        // A show swiped away (and destroyed) makes no request of its own 200 ms after.
        let entries = s["entries"] as? [[String: Any]] ?? []
        for gone in s["destroyed"] as? [[String: Any]] ?? [] {
            guard let stream = gone["stream"] as? String, let at = gone["at"] as? Double else { continue }
            let own = entries.filter { ($0["url"] as? String ?? "").contains("/live/shop/\(stream)/") }
            let late = own.filter { ($0["start"] as? Double ?? 0) > at + 200 }
            #expect(own.count > late.count, "\(stream)'s player made requests before it was destroyed")
            #expect(late.isEmpty, "\(stream)'s player was destroyed at \(Int(at)) ms; its requests after 200 ms: \(late.prefix(3))")
        }
        #expect(!(s["destroyed"] as? [[String: Any]] ?? []).isEmpty, "the page destroyed the players swiped away")

        // The show on screen's hls.js stops loading media while its playlists go on (the wedge
        // BrowserPlaybackTests reproduces): its part and segment requests are never sent. The
        // page gives that player a new hls.js and the show plays on.
        _ = try await browser.evaluate("""
            const send = XMLHttpRequest.prototype.send;
            XMLHttpRequest.prototype.send = function () {
              const w = window.storecastWedged;
              if (w && w.hls === window.storecastFeed.hlsOf(w.stream) && (this.storecastURL || '').includes('/live/shop/' + w.stream + '/') && /\\.m4s/.test(this.storecastURL)) return;
              return send.apply(this, arguments);
            };
            const open = XMLHttpRequest.prototype.open;
            XMLHttpRequest.prototype.open = function (method, url) { this.storecastURL = String(url); return open.apply(this, arguments); };
            window.storecastWedged = { stream: 'bravo', hls: window.storecastFeed.hlsOf('bravo') };
            return true;
            """)
        let recoveriesBefore = (try await browser.evaluate("return window.storecastFeed.recoveries") as? NSNumber)?.intValue ?? 0
        let recovery = try await WedgeRecovery.watch(from: nil, recoveriesBefore: recoveriesBefore) {
            let probe = await Self.player("bravo", in: browser)
            guard probe.count == 6, let time = (probe[0] as? NSNumber)?.doubleValue, let recoveries = (probe[1] as? NSNumber)?.intValue else { return nil }
            return .init(time: time, recoveries: recoveries, shown: probe)
        }
        #expect(recovery.resumedAfter != nil, "the feed started the starved player again and its show played on; every 250 ms [time, recoveries, errors, paused, live edge, buffered]: \(recovery.samples)")
        let replaced = try await browser.evaluate("return window.storecastFeed.hlsOf('bravo') !== window.storecastWedged.hls") as? Bool
        #expect(replaced == true, "the wedged player got a new hls.js (a jump alone cannot cure a wedge)")
        #expect(recovery.frozeFor < .seconds(5), "the show on screen froze \(recovery.frozeFor)")
        print("FeedTests: a wedged player was started again; the show froze \(recovery.frozeFor)")

        // A swipe back: charlie plays, and bravo, swiped away into the next slot, is not left
        // playing off screen: its player is destroyed and bravo preloaded again, paused.
        _ = try await browser.evaluate("window.storecastFeed.go(-1); return true")
        var bravo: [(paused: Bool, time: Double, played: Double)] = []
        let preloadedAgain = await StorecastStack.eventually(timeout: .seconds(10)) {
            let probe = (try? await browser.evaluate("""
                const f = window.storecastFeed, v = f.videoOf('bravo');
                let played = 0;
                if (v) for (let i = 0; i < v.played.length; i++) played += v.played.end(i) - v.played.start(i);
                return [f.players().join(','), f.destroyed.filter(d => d.stream === 'bravo').length, v ? v.paused : null, v ? v.currentTime : -1, played];
                """)) as? [Any] ?? []
            guard probe.count == 5, probe[0] as? String == "charlie,bravo", (probe[1] as? NSNumber)?.intValue == 1, let paused = probe[2] as? Bool else { return false }
            bravo.append((paused, (probe[3] as? NSNumber)?.doubleValue ?? -1, (probe[4] as? NSNumber)?.doubleValue ?? -1))
            try? await Task.sleep(for: .milliseconds(150))
            return bravo.count >= 6  // six readings over about 1.5 s
        }
        s = await state()
        #expect(preloadedAgain, "after a swipe back, charlie plays and bravo waits in the next slot with a new player: \(s["players"] ?? "?"), destroyed \(s["destroyed"] ?? "?")")
        // Paused throughout, and nothing of it played (its time is only moved to the live edge).
        #expect(bravo.allSatisfy { $0.paused && $0.played == 0 }, "bravo's video does not play in the next slot: \(bravo)")
        // charlie, started cold, had the link to itself: bravo's new player sent its first
        // request once charlie showed its first frame.
        if let back = (s["swipes"] as? [[String: Any]])?.last, back["to"] as? String == "charlie",
           let at = back["at"] as? Double, let ms = back["ms"] as? Double,
           let destroyedAt = (s["destroyed"] as? [[String: Any]])?.last(where: { $0["stream"] as? String == "bravo" })?["at"] as? Double {
            let again = (s["entries"] as? [[String: Any]] ?? []).filter { ($0["url"] as? String ?? "").contains("/live/shop/bravo/") }
                .compactMap { $0["start"] as? Double }.filter { $0 > destroyedAt }
            print("FeedTests: after the swipe back, charlie's first frame at \(Int(ms)) ms, bravo's preload from \(again.min().map { Int($0 - at) } ?? -1) ms")
            #expect(!again.isEmpty && again.allSatisfy { $0 >= at + ms }, "bravo's preload waits for charlie's first frame at \(Int(ms)) ms: \(again.map { Int($0 - at) })")
        } else {
            Issue.record("the swipe back to charlie and bravo's destruction are recorded: \(s["swipes"] ?? "?"), \(s["destroyed"] ?? "?")")
        }
        #expect((s["maxPlayers"] as? Int ?? 99) <= 2 && (s["videos"] as? Int ?? 99) <= 2, "never more than two players: \(s["maxPlayers"] ?? "?")")
        _ = try await browser.evaluate("window.storecastFeed.go(1); return true")
        let swipedOn = await StorecastStack.eventually(timeout: .seconds(10)) {
            ((await state()["swipes"] as? [[String: Any]])?.map { $0["to"] as? String ?? "" } ?? []) == ["charlie", "bravo", "charlie", "bravo"]
        }
        s = await state()
        #expect(swipedOn, "back and forth: \(s["swipes"] ?? "?")")
        for swipe in (s["swipes"] as? [[String: Any]] ?? []).dropFirst(2) { print("FeedTests: swipe back and forth to \(swipe["to"] ?? "?"): first frame \(Int((swipe["ms"] as? Double ?? -1).rounded())) ms after the swipe, \(String(format: "%.2f", swipe["behind"] as? Double ?? -1)) s behind the live edge") }

        // charlie's publisher stops: the show ends and drops out of the feed without a reload.
        publishers["charlie"]?.stop(grace: 1)
        let dropped = await StorecastStack.eventually(timeout: .seconds(60)) {
            (await state()["shows"] as? [String]) == ["alpha", "bravo"]
        }
        s = await state()
        await browser.close()
        #expect(dropped, "the ended show dropped out: \(s["shows"] ?? "?")")
        #expect(s["players"] as? [String] == ["bravo"], "the show on screen plays on: \(s["players"] ?? "?")")
        _ = await stack.stop()
    }

    /// The origin restarts under the show a shopper watches in the feed (the packager stopped
    /// with SIGTERM and started again with the same command line, as systemd or Kubernetes
    /// would), behind the caching proxy: the show plays on in the same player slot, as it does
    /// on the player page (FaultMatrixTests), with no reload and no swipe.
    @Test func theShowOnScreenPlaysOnThroughAnOriginRestart() async throws {
        let stack = try StorecastStack()
        let key = try await stack.provisionStream(tenant: "shop", stream: "alpha")
        let api = "http://127.0.0.1:\(stack.apiPort)"
        try stack.start(packagerArguments: ["--events-url", api, "--hlsjs-file", try TestEnvironment.testTool("hls.js").path])
        try await stack.waitUntilReady()
        let (nginx, cdn, _) = try await CachedCrossOriginPlaybackTests.startCache(for: stack)
        defer { nginx.stop(grace: 2) }
        let publisher = try EndToEndTests.publisher(url: stack.rtmpURL(key: key), seconds: 90, logDirectory: stack.logDirectory, size: "426x240")
        defer { publisher.stop(grace: 1) }
        let browser = try await WebDriverSession(logDirectory: stack.logDirectory)
        try await browser.navigate("\(cdn)/feed/shop")
        func probe() async -> (time: Double, shown: [Any])? {
            let values = await Self.player("alpha", in: browser)
            guard values.count == 6, let time = (values[0] as? NSNumber)?.doubleValue else { return nil }
            return (time, values)
        }
        var shown: [Any] = []
        let playing = await StorecastStack.eventually(timeout: .seconds(30)) {
            shown = await probe()?.shown ?? []
            return (shown.first as? NSNumber)?.doubleValue ?? 0 > 4
        }
        #expect(playing, "the feed plays the show: \(shown)")

        let packager = try #require(stack.service("storecast-packager"))
        let stoppedAt = ContinuousClock.now
        let before = try #require(await probe()?.time, "the feed's player can be read before the stop")
        packager.stop(grace: 15)
        try await Task.sleep(for: .seconds(1))  // systemd's RestartSec
        try stack.restart("storecast-packager")
        // Sampled every 250 ms for 25 s from the stop: the longest time the video stood still
        // once the origin was back, and how far it got.
        var samples: [[Any]] = [], lastTime = before, stillSince = ContinuousClock.now, longest = Duration.zero, last = before
        while ContinuousClock.now - stoppedAt < .seconds(25) {
            try await Task.sleep(for: .milliseconds(250))
            guard let p = await probe() else { continue }
            samples.append(p.shown)
            if p.time != lastTime { longest = max(longest, .now - stillSince); stillSince = .now; lastTime = p.time }
            last = p.time
        }
        longest = max(longest, .now - stillSince)
        await browser.close()
        print("FeedTests: origin restarted (SIGTERM): the show on screen stood still at most \(longest), from \(before) s to \(last) s in 25 s")
        #expect(last - before > 12, "the show played on after the origin restarted; every 250 ms [time, recoveries, errors, paused, live edge, buffered]: \(samples)")
        #expect(longest < .seconds(5), "the show on screen stood still \(longest); every 250 ms [time, recoveries, errors, paused, live edge, buffered]: \(samples)")
        _ = await stack.stop()
    }

    /// A feed player as the tests read it: [video time, the feed's recoveries, its fatal errors,
    /// paused, hls.js's live edge, buffered ranges]; empty when the show has no player.
    static func player(_ stream: String, in browser: WebDriverSession) async -> [Any] {
        (try? await browser.evaluate("""
            const f = window.storecastFeed, v = f && f.videoOf('\(stream)'), h = f && f.hlsOf('\(stream)'), d = h && h.latestLevelDetails;
            if (!v) return [];
            return [v.currentTime, f.recoveries, f.errors || 0, v.paused, d ? d.edge : -1,
                    Array.from({length: v.buffered.length}, (_, i) => v.buffered.start(i).toFixed(2) + '-' + v.buffered.end(i).toFixed(2)).join(' ')];
            """) as? [Any]) ?? []
    }
}
