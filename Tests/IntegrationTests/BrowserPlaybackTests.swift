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
}
