import Foundation
import Testing

/// A shopper watching with hls.js (low-latency mode, the packager's own player page) in headless
/// Chromium while a fault runs: the fault matrix's "did playback continue" column. It samples the
/// video's time, hls.js's fatal errors and the page's stalls once a second from the moment the
/// page opens, without holding up the fault.
///
/// On for every row when `STORECAST_FAULT_PLAYER=hls.js` (bench/fault_matrix.sh sets it, with
/// the release build); in the test command only for the rows that ask for it (`always`), to keep
/// 2 cores for the ladder.
final class HlsJsViewer: @unchecked Sendable {
    static var enabled: Bool { ProcessInfo.processInfo.environment["STORECAST_FAULT_PLAYER"] == "hls.js" }

    /// What the packager needs to serve hls.js and choose it on its page (none when off).
    static func packagerArguments(always: Bool = false) throws -> [String] {
        enabled || always ? ["--hlsjs-file", try TestEnvironment.testTool("hls.js").path, "--player", "hls.js"] : []
    }

    struct Sample {
        let at: Double
        let currentTime: Double
        let fatalErrors: Int
        let stalls: [Double]
        let player: String
        /// hls.js's details of each fatal error, in order.
        let errors: String
        /// Times the page's watchdog got a stuck player going again.
        let recoveries: Int
        /// The video element and the page's status line, for a failure's message.
        let state: String
    }

    private let browser: WebDriverSession
    private let started = ContinuousClock.now
    private var samples: [Sample] = []
    private var sampler: Task<Void, Never>?

    /// Opens the player page of `tenant/stream` (it waits for the show by itself).
    static func watch(_ stack: StorecastStack, tenant: String = "shop", stream: String, always: Bool = false) async throws -> HlsJsViewer? {
        guard enabled || always else { return nil }
        let viewer = HlsJsViewer(browser: try await WebDriverSession(logDirectory: stack.logDirectory))
        try await viewer.browser.navigate("\(stack.playbackBase)/play/\(tenant)/\(stream)")
        viewer.sampler = Task { await viewer.sample() }
        return viewer
    }

    private init(browser: WebDriverSession) {
        self.browser = browser
    }

    private func sample() async {
        let probe = """
            const v = document.getElementById('player');
            return [v.currentTime, window.storecastErrors || 0, window.storecastStalls || [], window.storecastPlayer || '', (window.storecastErrorDetails || []).join(','), window.storecastRecoveries || 0,
                    'readyState ' + v.readyState + ', buffered ' + Array.from({length: v.buffered.length}, (_, i) => v.buffered.start(i).toFixed(2) + '-' + v.buffered.end(i).toFixed(2)).join(' ') + ', status ' + document.getElementById('status').textContent + ', paused ' + v.paused + ', hls ' + (() => { const h = window.storecastHls; if (!h) return '-'; const l = h.levels[h.currentLevel]; const d = l && l.details; if (!d) return 'no details'; const f = d.fragments; const sc = h.streamController; return 'level ' + h.currentLevel + ' frags ' + f[0].sn + '@' + f[0].start.toFixed(2) + '..' + f[f.length-1].sn + '@' + f[f.length-1].start.toFixed(2) + ' cc ' + f[0].cc + '-' + f[f.length-1].cc + ' state ' + (sc && sc.state) + ' prev ' + (sc && sc.fragPrevious ? sc.fragPrevious.sn + '/cc' + sc.fragPrevious.cc + '@' + sc.fragPrevious.start.toFixed(2) : '-') + ' live ' + d.live + ' edge ' + d.edge.toFixed(2); })() + ', events ' + (window.storecastEvents || []).slice(-40).map(e => e.at + ' ' + e.text + (e.n > 1 ? ' x' + e.n : '')).join(' ; ') + ', last requests ' + performance.getEntriesByType('resource').slice(-6).map(r => r.name.replace(location.origin, '') + ' ' + Math.round(r.startTime) + '+' + Math.round(r.duration) + 'ms ' + r.responseStatus).join(' | ')];
            """
        // What hls.js did with each playlist and every error (fatal or not), for a failure's message.
        let listen = """
            const h = window.storecastHls; if (!h || window.storecastEvents) return !!h;
            window.storecastEvents = [];
            const keep = (t) => { const ev = window.storecastEvents, last = ev[ev.length - 1];
              if (last && last.text === t) { last.n++; return; }
              ev.push({ at: Math.round(performance.now()), text: t, n: 1 }); if (ev.length > 40) ev.shift(); };
            h.on(Hls.Events.LEVEL_LOADED, (e, d) => keep('level ' + d.level + ' [' + d.details.startSN + ',' + d.details.endSN + '] skipped ' + d.details.skippedSegments + (d.details.deltaUpdateFailed ? ' DELTA FAILED' : '') + ' cc ' + d.details.startCC + '-' + d.details.endCC + ' first ' + (d.details.fragments[0] ? d.details.fragments[0].start.toFixed(2) : '?')));
            h.on(Hls.Events.ERROR, (e, d) => keep('error ' + d.details + (d.fatal ? ' FATAL' : '') + ' ' + (d.response ? d.response.code : '') + ' ' + (d.frag ? 'sn ' + d.frag.sn + ' level ' + d.frag.level : '') + ' ' + (d.part ? 'part ' + d.part.index : '') + ' ' + (d.errorAction ? 'action ' + d.errorAction.action + ' flags ' + d.errorAction.flags : '') + ' ' + (d.reason || (d.error && d.error.message) || '')));
            h.on(Hls.Events.FRAG_LOADED, (e, d) => keep('frag ' + d.frag.sn + (d.part ? '.' + d.part.index : '') + ' level ' + d.frag.level + ' @' + d.frag.start.toFixed(2)));
            return true;
            """
        while !Task.isCancelled {
            _ = try? await browser.evaluate(listen)
            if let s = try? await browser.evaluate(probe) as? [Any], s.count == 7 {
                samples.append(Sample(at: started.duration(to: .now) / .seconds(1),
                                      currentTime: (s[0] as? NSNumber)?.doubleValue ?? 0,
                                      fatalErrors: (s[1] as? NSNumber)?.intValue ?? 0,
                                      stalls: (s[2] as? [NSNumber])?.map(\.doubleValue) ?? [],
                                      player: s[3] as? String ?? "", errors: s[4] as? String ?? "", recoveries: (s[5] as? NSNumber)?.intValue ?? 0,
                                      state: s[6] as? String ?? ""))
            }
            try? await Task.sleep(for: .seconds(1))
        }
    }

    /// Stops watching and judges: hls.js played, had no fatal error, and was still playing at the
    /// end (the video's time advanced by at least 3 s over the last 5 s). Returns the figure.
    func finish(_ fault: String) async -> String {
        sampler?.cancel()
        await sampler?.value
        await browser.close()
        if ProcessInfo.processInfo.environment["STORECAST_FAULT_TRACE"] != nil {
            for s in samples { print("trace \(fault) at \(String(format: "%.1f", s.at)) s: time \(String(format: "%.2f", s.currentTime)), \(s.state)") }
        }
        let last = samples.last
        let tail = samples.filter { $0.at >= (last?.at ?? 0) - 5 }
        let advanced = (tail.last?.currentTime ?? 0) - (tail.first?.currentTime ?? 0)
        let stalls = last?.stalls ?? []
        // The longest time the video's time stood still while playing, from the samples (1 s apart).
        var frozen = 0.0, since: Sample?
        for s in samples where s.currentTime > 0 {
            if let start = since, s.currentTime <= start.currentTime + 0.05 { frozen = max(frozen, s.at - start.at) } else { since = s }
        }
        #expect(samples.contains { $0.player == "hls.js" && $0.currentTime > 0 }, "\(fault): hls.js played: \(samples.suffix(3))")
        #expect((last?.fatalErrors ?? -1) == 0, "\(fault): no fatal hls.js error: \(last?.errors ?? "no sample")")
        #expect(advanced >= 3, "\(fault): hls.js still playing at the end: \(String(format: "%.1f", advanced)) s of video over the last 5 s; \(samples.suffix(8).map { "at \(String(format: "%.0f", $0.at)) s: time \(String(format: "%.2f", $0.currentTime)), \($0.state)" })")
        return "hls.js: played \(String(format: "%.1f", last?.currentTime ?? 0)) s, fatal errors \(last?.fatalErrors ?? -1), watchdog recoveries \(last?.recoveries ?? 0), longest freeze \(String(format: "%.0f", frozen)) s (sampled each second), stalls \(stalls.map { String(format: "%.2f", $0) }) s, still playing (+\(String(format: "%.1f", advanced)) s over the last 5 s)"
    }
}
