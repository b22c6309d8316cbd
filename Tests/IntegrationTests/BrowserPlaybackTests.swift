import Foundation
import Testing

/// The project's player page in real headless Chromium (Debian's chromium + chromium-driver):
/// the live stream plays, time advances, no error.
@Suite(.serialized) struct BrowserPlaybackTests {
    @Test func playerPagePlaysTheLiveStreamInChromium() async throws {
        let stack = try StorecastStack()
        let key = try await stack.provisionStream(tenant: "shop", stream: "launch")
        try stack.start()
        try await stack.waitUntilReady()
        let publisher = try EndToEndTests.publisher(url: stack.rtmpURL(key: key), seconds: 25, logDirectory: stack.logDirectory)
        defer { publisher.stop(grace: 1) }
        let ready = await StorecastStack.eventually(timeout: .seconds(15)) {
            await TestEnvironment.httpGet("\(stack.playbackBase)/live/shop/launch/master.m3u8")?.status == 200
        }
        #expect(ready, "stream never became playable:\n\(stack.logs())")

        let browser = try await WebDriverSession(logDirectory: stack.logDirectory)
        try await browser.navigate("\(stack.playbackBase)/play/shop/launch")
        let probe = "const v = document.getElementById('player'); return [v.currentTime, v.readyState, v.error ? v.error.message : '', v.videoWidth, window.storecastPlayer || ''];"
        var samples: [[Any]] = []
        for _ in 0..<10 {
            try await Task.sleep(for: .seconds(1))
            if let s = try await browser.evaluate(probe) as? [Any] { samples.append(s) }
        }
        await browser.close()
        let times = samples.compactMap { ($0.first as? NSNumber)?.doubleValue }
        #expect(times.count == 10, "page answered every probe: \(samples)")
        #expect((times.last ?? 0) - (times.first ?? 0) > 5, "currentTime advanced over 9 s: \(times)")
        #expect(samples.allSatisfy { ($0[2] as? String) == "" }, "no media error: \(samples)")
        #expect((samples.last?[3] as? NSNumber)?.intValue == 854, "the top rendition is playing")
        _ = await stack.stop()
    }
}
