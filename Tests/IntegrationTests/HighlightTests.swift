import Foundation
import Testing

/// Product cards in step with the video (issue 18), from the shopper's side: a seller's back end
/// posts cards through the API while the show is live; every rendition's media playlist gets
/// each as an EXT-X-DATERANGE starting when the API received it; the player page, loaded through
/// a caching proxy (nginx, as a CDN), plays with hls.js and shows each card on the frame it
/// belongs to (the frame's program date-time against the range's START-DATE).
@Suite(.serialized) struct HighlightTests {
    @Test func cardsReachEveryRenditionAndShowWithTheirFrame() async throws {
        let stack = try StorecastStack()
        let key = try await stack.provisionStream(tenant: "shop", stream: "cards")
        try stack.start(packagerArguments: ["--hlsjs-file", try TestEnvironment.testTool("hls.js").path])
        try await stack.waitUntilReady()
        let dir = stack.logDirectory
        let (nginx, cdn, _) = try await CachedCrossOriginPlaybackTests.startCache(for: stack)
        defer { nginx.stop(grace: 2) }

        let publisher = try EndToEndTests.publisher(url: stack.rtmpURL(key: key), seconds: 50, logDirectory: dir)
        defer { publisher.stop(grace: 1) }
        let browser = try await WebDriverSession(logDirectory: dir)
        try await browser.navigate("\(cdn)/play/shop/cards?player=hls.js")
        // Cards come while the shopper watches steadily: 5 s after the first frame, where hls.js
        // 1.6.15 under CPU load can stop appending until the page gives it a new hls.js, which
        // starts at the live edge, past a card posted then (its in-band cue never loaded, the card
        // shown seconds late: seen once in 4 runs with busy loops, docs/reliability.md).
        let playing = await StorecastStack.eventually(timeout: .seconds(30)) {
            let watched = "const v = document.getElementById('player'); return v.currentTime > 2 && window.storecastFirstFrame !== undefined ? performance.now() - window.storecastFirstFrame : 0"
            return ((try? await browser.evaluate(watched) as? NSNumber)?.doubleValue ?? 0) > 5000
        }
        #expect(playing, "the page plays through the cache:\n\(stack.logs())")
        // For a failure's message: every 250 ms, the video's time, hls.js's rendition and what
        // was buffered; and hls.js's switches and errors.
        _ = try await browser.evaluate("""
            window.storecastTimeline = [];
            const v = document.getElementById('player'), t0 = performance.now();
            setInterval(() => {
              const h = window.storecastHls;
              window.storecastTimeline.push([Math.round(performance.now() - t0), v.currentTime.toFixed(2), h ? h.currentLevel : -1, window.storecastRecoveries || 0,
                Array.from({length: v.buffered.length}, (_, i) => v.buffered.start(i).toFixed(2) + '-' + v.buffered.end(i).toFixed(2)).join(' ')].join(' '));
            }, 250);
            let hooked = null;
            setInterval(() => {
              const h = window.storecastHls;
              if (!h || h === hooked) return;
              hooked = h;
              for (const name of ['LEVEL_SWITCHING', 'ERROR']) h.on(Hls.Events[name], (e, d) => window.storecastTimeline.push(Math.round(performance.now() - t0) + ' ' + name + ' ' + (d.level ?? d.details ?? '')));
            }, 50);
            return true;
            """)

        // Two cards: one for 4 s, then one until the next (none comes: it stays).
        let api = "http://127.0.0.1:\(stack.apiPort)/v1/tenants/shop/streams/cards/highlights"
        var posted: [(id: Int, start: Double, startDate: String)] = []
        for body in [#"{"productId":"sku-1","title":"Red dress","price":"49.90","currency":"EUR","link":"https://shop.example.com/dress","durationSeconds":4}"#,
                     #"{"productId":"sku-2","title":"Blue hat","imageUrl":"https://cdn.example.com/hat.jpg"}"#] {
            let r = try #require(await TestEnvironment.http("POST", api, json: body))
            let text = String(decoding: r.body, as: UTF8.self)
            #expect(r.status == 201, "\(text)")
            let json = try #require(try JSONSerialization.jsonObject(with: Data(r.body)) as? [String: Any])
            posted.append((json["id"] as? Int ?? 0, json["startSeconds"] as? Double ?? 0, json["startDate"] as? String ?? ""))
            try await Task.sleep(for: .seconds(6))
        }

        // Every media playlist of every rendition lists both, at the moment the API received them.
        let master = await TestEnvironment.httpText("\(stack.playbackBase)/live/shop/cards/master.m3u8")
        let playlists = master.split(separator: "\n").filter { !$0.hasPrefix("#") && $0.hasSuffix(".m3u8") }.map(String.init)
            + master.matches(of: /URI="([^"]+)"/).map { String($0.1) }
        #expect(playlists.count >= 3, "\(master)")
        for uri in playlists {
            let text = await TestEnvironment.httpText("\(stack.playbackBase)/live/shop/cards/\(uri)")
            let ranges = text.split(separator: "\n").filter { $0.hasPrefix("#EXT-X-DATERANGE:") }
            #expect(ranges.contains { $0.contains(#"ID="highlight-\#(posted[0].id)""#) && $0.contains(#"START-DATE="\#(posted[0].startDate)""#)
                && $0.contains("DURATION=4.000,") && $0.contains(#"X-TITLE="Red dress""#) && $0.contains(#"CLASS="com.storecast.highlight""#) },
                    "\(uri) lists the first card: \(ranges)")
            #expect(ranges.contains { $0.contains(#"ID="highlight-\#(posted[1].id)""#) && $0.contains("END-ON-NEXT=YES") && $0.contains(#"X-IMAGE-URL="https://cdn.example.com/hat.jpg""#) },
                    "\(uri) lists the second card: \(ranges)")
        }

        // The page showed each card with its frame, and shows the second now.
        var cards: [[String: Any]] = []
        _ = await StorecastStack.eventually(timeout: .seconds(10)) {
            let json = (try? await browser.evaluate("return JSON.stringify(window.storecastCards)")) as? String ?? "[]"
            cards = (try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]]) ?? []
            return cards.contains { $0["title"] as? String == "Blue hat" }
        }
        // In band too: hls.js read each card's ID3 `emsg` from the media (its `id3` metadata
        // cues). The event starts with the card's date range (its `dateranges` cue) or, where
        // that moment was written before the packager read the card, with the first chunk
        // after: never before it, and later only by the card's way to the packager (read from
        // PostgreSQL every 250 ms, carried every 100 ms, then the next chunk): about 0.3-0.7 s
        // here, 1.2 s once with three busy loops beside the test. A segment (2 s) or more would be
        // a wrong mapping, not a slow read.
        let inBand = #"""
            const out = [];
            for (const t of document.getElementById('player').textTracks) {
              if (t.kind !== 'metadata') continue;
              if (t.mode === 'disabled') t.mode = 'hidden';
              for (const c of Array.from(t.cues || [])) out.push({ label: t.label, id: c.id, start: c.startTime, info: c.value && c.value.info, data: c.value && c.value.data });
            }
            return JSON.stringify(out);
            """#
        var cues: [[String: Any]] = []
        func starts(_ n: Int) -> (emsg: Double?, dateRange: Double?) {
            let emsg = cues.first { ($0["info"] as? String) == "com.storecast.highlight" && (($0["data"] as? String) ?? "").contains(#""ID":"highlight-\#(n)""#) }
            let range = cues.first { ($0["id"] as? String) == "highlight-\(n)" }
            return (emsg?["start"] as? Double, range?["start"] as? Double)
        }
        _ = await StorecastStack.eventually(timeout: .seconds(10)) {
            let json = (try? await browser.evaluate(inBand)) as? String ?? "[]"
            cues = (try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]]) ?? []
            return posted.allSatisfy { starts($0.id).emsg != nil && starts($0.id).dateRange != nil }
        }
        let timeline = (try? await browser.evaluate("return window.storecastTimeline.join('; ')")) as? String ?? "?"
        for sent in posted {
            let (emsg, range) = starts(sent.id)
            guard let emsg, let range else { Issue.record("highlight-\(sent.id): an in-band cue and a date-range cue: \(cues); every 250 ms since playing [ms, time, rendition, recoveries, buffered]: \(timeline)"); continue }
            print("HighlightTests: highlight-\(sent.id) in band \(Int(((emsg - range) * 1000).rounded())) ms after its date range")
            #expect(emsg - range > -0.05 && emsg - range < 2, "highlight-\(sent.id): the in-band card starts with its date range or the first chunk after: emsg \(emsg) s, date range \(range) s; every 250 ms: \(timeline)")
        }
        let onScreen = (try? await browser.evaluate("const c = document.getElementById('card'); return c.hidden ? 'hidden' : c.querySelector('.title').textContent")) as? String
        let errors = (try? await browser.evaluate("return JSON.stringify(window.storecastErrorDetails || [])")) as? String ?? "?"
        await browser.close()
        #expect(cards.map { $0["title"] as? String ?? "" } == ["Red dress", "Blue hat"], "each card once, in order (the first ends after its 4 s): \(cards)")
        #expect(onScreen == "Blue hat", "the open card is on screen: \(onScreen ?? "?")")
        #expect(errors == "[]", "no fatal player error: \(errors)")
        for (card, sent) in zip(cards, posted) {
            let (pdt, start) = (card["framePDT"] as? Double, card["startDate"] as? Double)
            #expect(start == (sent.start * 1000).rounded(), "the page read the START-DATE the API answered: \(card) \(sent)")
            guard let pdt, let start else { Issue.record("no program date-time for \(card)"); continue }
            // A figure, not a pass mark (docs/benchmarks.md): how far the frame that showed the
            // card is from the card's START-DATE. Never before it; seconds off would be a wrong mapping.
            print("HighlightTests: \(card["title"] ?? "?") shown on the frame at START-DATE \(Int((pdt - start).rounded())) ms")
            #expect(pdt - start >= -34 && pdt - start < 1000, "the card shows with its frame: \(card); every 250 ms since playing [ms, time, rendition, recoveries, buffered]: \(timeline)")
        }
        // The cards were announced, so the packager does not say they come only by its poll
        // (PostgresListenerTests has the case where it must).
        let packagerLog = stack.service("storecast-packager")?.log ?? ""
        #expect(!packagerLog.contains("reach this packager only by its poll"), "\(packagerLog.suffix(3000))")
        _ = await stack.stop()
    }
}
