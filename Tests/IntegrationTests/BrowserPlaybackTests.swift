import Foundation
import Testing

/// The project's player page in real headless Chromium (Debian's chromium + chromium-driver).
/// The page is opened before the seller goes live, as shoppers do; it must start by itself,
/// play with time advancing, and never report a media error.
@Suite(.serialized) struct BrowserPlaybackTests {
    static let probe = """
        const v = document.getElementById('player');
        return [v.currentTime, v.readyState, v.error ? v.error.message : '', v.videoWidth, window.storecastPlayer || '', window.storecastErrors || 0];
        """

    @Test func playerPageOpenedBeforeGoingLivePlaysTheStream() async throws {
        let stack = try StorecastStack()
        let key = try await stack.provisionStream(tenant: "shop", stream: "launch")
        try stack.start()
        try await stack.waitUntilReady()
        let browser = try await WebDriverSession(logDirectory: stack.logDirectory)
        try await browser.navigate("\(stack.playbackBase)/play/shop/launch")

        let publisher = try EndToEndTests.publisher(url: stack.rtmpURL(key: key), seconds: 30, logDirectory: stack.logDirectory)
        defer { publisher.stop(grace: 1) }
        var samples: [[Any]] = []
        let started = await StorecastStack.eventually(timeout: .seconds(20)) {
            guard let s = try? await browser.evaluate(Self.probe) as? [Any] else { return false }
            samples.append(s)
            return ((s.first as? NSNumber)?.doubleValue ?? 0) > 0
        }
        #expect(started, "playback never started: \(samples.suffix(3))\n\(stack.logs())")
        samples = []
        for _ in 0..<8 {
            try await Task.sleep(for: .seconds(1))
            if let s = try await browser.evaluate(Self.probe) as? [Any] { samples.append(s) }
        }
        await browser.close()
        let times = samples.compactMap { ($0.first as? NSNumber)?.doubleValue }
        #expect(times.count == 8, "page answered every probe: \(samples)")
        #expect((times.last ?? 0) - (times.first ?? 0) > 5, "currentTime advanced over 7 s: \(times)")
        #expect(samples.allSatisfy { ($0[2] as? String) == "" && ($0[5] as? NSNumber)?.intValue == 0 }, "no media error: \(samples)")
        #expect((samples.last?[3] as? NSNumber)?.intValue == 854, "the top rendition (listed first) is playing")
        _ = await stack.stop()
    }

    /// A seller restarts the show a moment after ending it: the package (still served) goes on
    /// after an EXT-X-DISCONTINUITY. Chromium's native player starts three whole segments from
    /// the end; started across the discontinuity it failed and retried 2 s later (the 2.4 s join
    /// seen in one run of ten in the benchmark). The page waits for three segments after it.
    @Test func aShowRestartedWithinTheRetentionPlaysNativelyWithoutAnError() async throws {
        let stack = try StorecastStack()
        let key = try await stack.provisionStream(tenant: "shop", stream: "again")
        try stack.start()
        try await stack.waitUntilReady()
        let playlistURL = "\(stack.playbackBase)/live/shop/again/360p/index.m3u8"
        let first = try EndToEndTests.publisher(url: stack.rtmpURL(key: key), seconds: 10, logDirectory: stack.logDirectory)
        _ = await first.wait(timeout: 30)
        let ended = await StorecastStack.eventually(timeout: .seconds(20)) {
            await TestEnvironment.httpText(playlistURL).hasSuffix("#EXT-X-ENDLIST\n")
        }
        #expect(ended, "the first show ended:\n\(stack.logs())")
        let second = try EndToEndTests.publisher(url: stack.rtmpURL(key: key), seconds: 30, logDirectory: stack.logDirectory)
        defer { second.stop(grace: 1) }
        var playlist = ""
        let restarted = await StorecastStack.eventually(timeout: .seconds(20)) {
            playlist = await TestEnvironment.httpText(playlistURL)
            return (playlist.components(separatedBy: "#EXT-X-DISCONTINUITY\n").last?.components(separatedBy: "#EXTINF").count ?? 0) - 1 >= 2
        }
        #expect(restarted, "the new show has two segments after the cut (where Chromium failed):\n\(playlist)")
        let browser = try await WebDriverSession(logDirectory: stack.logDirectory)
        try await browser.navigate("\(stack.playbackBase)/play/shop/again?player=native")
        // The page's count of the current timeline's whole segments, in the browser, on golden
        // playlists: none cut, a restart with two segments after the cut, one with only parts
        // after it, and a cut that scrolled out (only DISCONTINUITY-SEQUENCE left).
        let seg = { (n: Int) in "#EXTINF:2.00000,\nseg-\(n).m4s\n" }
        let head = "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:4\n"
        let golden: [(String, Int)] = [
            (head + (4...7).map(seg).joined(), 4),
            (head + (4...10).map(seg).joined() + "#EXT-X-DISCONTINUITY\n" + (11...12).map(seg).joined(), 2),
            (head + (4...6).map(seg).joined() + "#EXT-X-DISCONTINUITY\n#EXT-X-PART:DURATION=0.33,URI=\"part-7.0.m4s\",INDEPENDENT=YES\n", 0),
            (head + "#EXT-X-DISCONTINUITY-SEQUENCE:1\n" + (4...6).map(seg).joined(), 3),
        ]
        for (text, expected) in golden {
            let literal = String(decoding: try JSONSerialization.data(withJSONObject: [text]), as: UTF8.self)
            let counted = try await browser.evaluate("return window.storecastTimelineSegments(\(literal)[0])") as? NSNumber
            #expect(counted?.intValue == expected, "\(text)")
        }
        var samples: [[Any]] = []
        let started = await StorecastStack.eventually(timeout: .seconds(20)) {
            guard let s = try? await browser.evaluate(Self.probe) as? [Any] else { return false }
            samples.append(s)
            return ((s.first as? NSNumber)?.doubleValue ?? 0) > 1
        }
        try await Task.sleep(for: .seconds(2))
        if let s = try await browser.evaluate(Self.probe) as? [Any] { samples.append(s) }
        await browser.close()
        #expect(started, "native playback started: \(samples.suffix(3))\n\(stack.logs())")
        #expect((samples.last?[4] as? String) == "native")
        #expect(samples.allSatisfy { ($0[2] as? String) == "" && ($0[5] as? NSNumber)?.intValue == 0 }, "no media error and no retry: \(samples.suffix(3))")
        _ = await stack.stop()
    }

    /// A shopper on a fast network climbs to the top rendition (issue 18). In low-latency mode
    /// hls.js measures parts as the encoder writes them, so on its own it stayed on 480p of a
    /// 720p show for good (`bench/hlsjs_abr.sh`: 0 % of 3 minutes on 720p, its estimate held at
    /// about three times 480p's bit rate); the page's probes (`storecastProbeRungs`) give it the
    /// network's own pace. Loopback is that fast network. The field ladder from a 720p source.
    @Test func hlsJSClimbsToTheTopRenditionOnAFastNetwork() async throws {
        let stack = try StorecastStack()
        let key = try await stack.provisionStream(tenant: "shop", stream: "climb")
        try stack.start(packagerArguments: ["--hlsjs-file", try TestEnvironment.testTool("hls.js").path, "--player", "hls.js"])
        try await stack.waitUntilReady()
        let publisher = try EndToEndTests.publisher(url: stack.rtmpURL(key: key), seconds: 120, logDirectory: stack.logDirectory, size: "1280x720")
        defer { publisher.stop(grace: 1) }
        let browser = try await WebDriverSession(logDirectory: stack.logDirectory)
        try await browser.navigate("\(stack.playbackBase)/play/shop/climb")
        let probe = """
            const v = document.getElementById('player'), h = window.storecastHls;
            const level = h && h.levels[h.currentLevel];
            return [v.currentTime, level ? level.height : 0, h ? Math.round(h.bandwidthEstimate) : 0, h ? (h.storecastProbes || 0) : 0,
                    h ? h.levels.map(l => l.height).join(',') : '', window.storecastErrors || 0];
            """
        func height(_ s: [Any]) -> Int { (s[1] as? NSNumber)?.intValue ?? 0 }
        var samples: [[Any]] = []
        let playing = await StorecastStack.eventually(timeout: .seconds(30)) {
            ((try? await browser.evaluate(probe) as? [Any])?.first as? NSNumber)?.doubleValue ?? 0 > 0
        }
        #expect(playing, "hls.js never started:\n\(stack.logs())")
        // Where hls.js starts depends on its first guess and on which parts it loads first (a
        // finished part measures the network, one at the live edge the encoder). A shopper who
        // has been on 480p at the live edge: put hls.js there (a switch at the next part, no
        // flush, so every part after it is paced), let its estimate settle on those parts, then
        // hand the choice back to it. Without the probes it stays on 480p.
        _ = try await browser.evaluate("window.storecastHls.nextLevel = 1; return true")
        let onMiddle = await StorecastStack.eventually(timeout: .seconds(20)) {
            guard let s = try? await browser.evaluate(probe) as? [Any] else { return false }
            return height(s) == 480
        }
        #expect(onMiddle, "hls.js took 480p when told to")
        try await Task.sleep(for: .seconds(10))
        _ = try await browser.evaluate("window.storecastHls.nextLevel = -1; return true")
        // A probe every 6 s: the climb takes one or two of them.
        let climbed = await StorecastStack.eventually(timeout: .seconds(60)) {
            guard let s = try? await browser.evaluate(probe) as? [Any] else { return false }
            if samples.last.map({ height($0) != height(s) }) ?? true { samples.append(s) }
            return height(s) == 720
        }
        #expect(climbed, "hls.js climbed from 480p to 720p within a minute; its levels over time (time, height, estimate, probes, ladder, errors): \(samples)")
        // And it stays there: the paced parts of 720p itself measure above it.
        var held: [[Any]] = []
        for _ in 0..<10 {
            try await Task.sleep(for: .seconds(1))
            if let s = try await browser.evaluate(probe) as? [Any] { held.append(s) }
        }
        await browser.close()
        #expect(held.count == 10 && held.allSatisfy { height($0) == 720 }, "stayed on 720p: \(held)")
        #expect(((held.last?[3] as? NSNumber)?.intValue ?? 0) >= 1, "the page probed: \(held.last ?? [])")
        #expect(((held.last?[4] as? String) ?? "").split(separator: ",").count == 3, "the field ladder from 720p: \(held.last ?? [])")
        #expect(held.allSatisfy { ($0[5] as? NSNumber)?.intValue == 0 }, "no fatal hls.js error: \(held)")
        let times = held.compactMap { ($0.first as? NSNumber)?.doubleValue }
        #expect((times.last ?? 0) - (times.first ?? 0) > 7, "time advanced: \(times)")
        _ = await stack.stop()
    }

    /// hls.js 1.6.15 in low-latency mode (served by the packager from --hlsjs-file, and the
    /// page's choice with --player hls.js) plays the LL-HLS stream for 20 s: time advances, no
    /// error, no stall over 1 s. Its own latency figure is printed for docs/benchmarks.md; then
    /// `?player=native` overrides the choice.
    @Test func hlsJSInLowLatencyModePlaysTwentySeconds() async throws {
        let stack = try StorecastStack()
        let key = try await stack.provisionStream(tenant: "shop", stream: "ll")
        try stack.start(packagerArguments: ["--hlsjs-file", try TestEnvironment.testTool("hls.js").path, "--player", "hls.js"])
        try await stack.waitUntilReady()
        let publisher = try EndToEndTests.publisher(url: stack.rtmpURL(key: key), seconds: 60, logDirectory: stack.logDirectory)
        defer { publisher.stop(grace: 1) }
        let browser = try await WebDriverSession(logDirectory: stack.logDirectory)
        try await browser.navigate("\(stack.playbackBase)/play/shop/ll")  // --player hls.js: the page's own choice
        // For a failure's message: what hls.js loaded and when (its loading events, and each
        // request's timing from the browser), hooked as soon as the page creates hls.js.
        _ = try await browser.evaluate("""
            performance.setResourceTimingBufferSize(5000);
            window.storecastTrace = [];
            window.storecastXHR = [];
            const open = XMLHttpRequest.prototype.open, send = XMLHttpRequest.prototype.send;
            XMLHttpRequest.prototype.open = function (method, url) { this.storecastURL = String(url); return open.apply(this, arguments); };
            XMLHttpRequest.prototype.send = function () {
              // The wedge below: media requests of that hls.js instance are never sent.
              if (window.storecastWedged && window.storecastWedged === window.storecastHls && /\\.m4s/.test(this.storecastURL || '')) return;
              const entry = { url: (this.storecastURL || '').split('/').slice(-2).join('/'), sent: Math.round(performance.now()), headers: null, end: null, how: null };
              window.storecastXHR.push(entry);
              if (window.storecastXHR.length > 600) window.storecastXHR.shift();
              this.addEventListener('readystatechange', () => { if (this.readyState >= 2 && entry.headers === null) entry.headers = Math.round(performance.now()); });
              for (const how of ['load', 'abort', 'error', 'timeout']) this.addEventListener(how, () => { entry.end = Math.round(performance.now()); entry.how = how; });
              return send.apply(this, arguments);
            };
            const hook = setInterval(() => {
              const h = window.storecastHls;
              if (!h) return;
              clearInterval(hook);
              for (const name of ['FRAG_LOADING', 'FRAG_LOADED', 'LEVEL_LOADING', 'LEVEL_LOADED', 'AUDIO_TRACK_LOADING', 'AUDIO_TRACK_LOADED', 'BUFFER_APPENDED', 'ERROR', 'FRAG_BUFFERED', 'BUFFER_FLUSHED']) {
                h.on(Hls.Events[name], (e, d) => {
                  const f = d.frag || (d.part && d.part.fragment);
                  window.storecastTrace.push([Math.round(performance.now()), name, f ? (f.type + ' ' + f.sn + (d.part ? '.' + d.part.index : '') + ' level ' + f.level) : (d.details || d.url || d.type || '')].join(' '));
                  if (window.storecastTrace.length > 1500) window.storecastTrace.shift();
                });
              }
            }, 5);
            return true;
            """)
        let probe = """
            const v = document.getElementById('player'), h = window.storecastHls;
            return [v.currentTime, window.storecastPlayer || '', window.storecastErrors || 0, window.storecastStalls || [],
                    h ? h.latency : -1, h ? h.lowLatencyMode : false, h && h.playingDate ? Date.now() - h.playingDate.getTime() : -1, h ? h.targetLatency : -1,
                    // for a failure's message: what was buffered, what the playlist listed
                    Array.from({length: v.buffered.length}, (_, i) => v.buffered.start(i).toFixed(2) + '-' + v.buffered.end(i).toFixed(2)).join(' '),
                    v.readyState, h ? h.currentLevel : -1, window.storecastRecoveries || 0,
                    h && h.latestLevelDetails ? h.latestLevelDetails.fragments.map(f => f.sn + ':' + f.start.toFixed(2) + (f.gap ? 'G' : '')).join(' ') : ''];
            """
        let started = await StorecastStack.eventually(timeout: .seconds(25)) {
            ((try? await browser.evaluate(probe) as? [Any])?.first as? NSNumber)?.doubleValue ?? 0 > 0
        }
        #expect(started, "hls.js never started:\n\(stack.logs())")
        var samples: [[Any]] = []
        for _ in 0..<20 {
            try await Task.sleep(for: .seconds(1))
            if let s = try await browser.evaluate(probe) as? [Any] { samples.append(s) }
        }
        let times = samples.compactMap { ($0.first as? NSNumber)?.doubleValue }
        #expect(times.count == 20)
        #expect(samples.allSatisfy { ($0[1] as? String) == "hls.js" && ($0[5] as? Bool) == true }, "hls.js in low-latency mode: \(samples.first ?? [])")
        #expect((times.last ?? 0) - (times.first ?? 0) > 17, "currentTime advanced over 19 s: \(times)")
        #expect(samples.allSatisfy { ($0[2] as? NSNumber)?.intValue == 0 }, "no hls.js error: \(samples.last ?? [])")
        // No stall over 1 s, unless the page cured it: hls.js 1.6.15 under CPU load can stop
        // appending in the first seconds (parts loaded, none appended, no request open; most
        // often after a switch down, once without: docs/reliability.md). The page then starts a
        // new hls.js (its starvation rule), which the shopper feels as a stall of about 3 s;
        // the test requires that cure, and no stall over 5 s.
        let stalls = (samples.last?[3] as? [NSNumber])?.map(\.doubleValue) ?? []
        let restarts = (try await browser.evaluate("return window.storecastRestarts || 0") as? NSNumber)?.intValue ?? 0
        let long = stalls.filter { $0 > 1 }
        if !long.isEmpty { print("hls.js low-latency run: stalls over 1 s \(long), the page's new hls.js \(restarts) times") }
        let cured = long.count <= restarts && long.allSatisfy { $0 < 5 }
        if !cured {
            let requests = try? await browser.evaluate("""
                return performance.getEntriesByType('resource').filter(r => r.responseStart - r.startTime > 500 || r.duration > 1500)
                  .map(r => r.name.split('/').slice(-2).join('/') + ' start ' + Math.round(r.startTime) + ' first byte +' + Math.round(r.responseStart - r.startTime) + ' done +' + Math.round(r.duration) + ' ' + r.nextHopProtocol);
                """)
            let trace = try? await browser.evaluate("return window.storecastTrace || []")
            let xhrs = try? await browser.evaluate("return (window.storecastXHR || []).filter(x => x.end === null || x.end - x.sent > 700 || x.how !== 'load').map(x => x.url + ' sent ' + x.sent + ' headers ' + x.headers + ' end ' + x.end + ' ' + x.how)")
            Issue.record("no stall over 1 s, or each one the page cured (a new hls.js) under 5 s: \(stalls), new hls.js \(restarts) times; each second [time, latency, buffered, readyState, level, recoveries, fragments]: \(samples.map { [$0[0], $0[4]] + $0[8...] })\nslow requests: \(requests ?? [])\nslow or open XHRs: \(xhrs ?? [])\nhls.js events: \(trace ?? [])\n\(stack.logs())")
        }
        let latencies = samples.compactMap { ($0[4] as? NSNumber)?.doubleValue }.filter { $0 > 0 }.sorted()
        let wall = samples.compactMap { ($0[6] as? NSNumber)?.doubleValue }.filter { $0 > 0 }.sorted()
        #expect(!latencies.isEmpty, "hls.js reports its latency")
        #expect(samples.last.map { ($0[7] as? NSNumber)?.doubleValue ?? 0 } ?? 0 < 1.5, "hls.js kept its target latency near PART-HOLD-BACK (0.6 s; the page lets a stall add 0.2 s, not hls.js's 1 s): \(samples.last ?? []), stalls \(stalls)")
        print("hls.js low-latency run: latency p50 \(latencies.isEmpty ? -1 : latencies[latencies.count / 2]) s, max \(latencies.last ?? 0) s, last \(samples.last?[4] ?? -1) s, target \(samples.last?[7] ?? -1) s; now minus PROGRAM-DATE-TIME of the frame on screen p50 \(wall.isEmpty ? -1 : wall[wall.count / 2]) ms; stalls \(stalls); rendition each second \(samples.map { ($0[10] as? NSNumber)?.intValue ?? -1 })")

        // A player whose hls.js stops loading media for good while its playlists go on (seen
        // under CPU load: after a rendition switch in the first seconds, hls.js appended nothing
        // more for 10 s) is started again by the page once it has starved 1.5 s; the watchdog
        // before jumped to the live position first, which cannot help it, and froze 6.6 s here.
        // Standing in for the wedge: that hls.js instance's part and segment requests are never
        // sent.
        let before = try #require(try await browser.evaluate(probe) as? [Any])
        let recoveriesBefore = (before[11] as? NSNumber)?.intValue ?? 0
        _ = try await browser.evaluate("window.storecastWedged = window.storecastHls; return true")
        let recovery = try await WedgeRecovery.watch(from: (before.first as? NSNumber)?.doubleValue, recoveriesBefore: recoveriesBefore) {
            guard let s = try await browser.evaluate(probe) as? [Any], let time = (s.first as? NSNumber)?.doubleValue else { return nil }
            return .init(time: time, recoveries: (s[11] as? NSNumber)?.intValue ?? 0, shown: [s[0], s[8], s[11]])
        }
        #expect(recovery.resumedAfter != nil, "the page started hls.js again and the video moved on within 15 s; every 250 ms [time, buffered, recoveries]: \(recovery.samples)")
        let restartsAfter = (try await browser.evaluate("return window.storecastRestarts || 0") as? NSNumber)?.intValue ?? 0
        #expect(restartsAfter > restarts, "the page counted its new hls.js (storecastRestarts \(restarts) then \(restartsAfter))")
        #expect(recovery.frozeFor < .seconds(5), "a player that loads nothing more froze \(recovery.frozeFor) (6.6 s before the starvation rule)")
        print("hls.js wedged: the page started it again; the video froze \(recovery.frozeFor), playing again \(recovery.resumedAfter.map { "\($0)" } ?? "never") after the wedge")

        // A shopper swiping to this live show: the page reports when its first frame was on screen.
        for player in ["hls.js", "native"] {
            try await browser.navigate("\(stack.playbackBase)/play/shop/ll\(player == "native" ? "?player=native" : "")")
            var firstFrame: Double?
            _ = await StorecastStack.eventually(timeout: .seconds(15)) {
                let value = try? await browser.evaluate("return [window.storecastFirstFrame === undefined ? -1 : window.storecastFirstFrame, window.storecastPlayer || '']") as? [Any]
                firstFrame = (value?.first as? NSNumber)?.doubleValue
                return (firstFrame ?? -1) > 0 && (value?.last as? String) == player
            }
            #expect((firstFrame ?? -1) > 0, "\(player): the page reports its first frame")
            print("\(player) joining a live stream: first frame \(firstFrame ?? -1) ms after opening the page")
        }
        await browser.close()
        _ = await stack.stop()
    }
}
