import Foundation
import Testing

/// EXT-X-DISCONTINUITY where the timeline starts over, through the whole stack: a publisher that
/// drops and reconnects (Wi-Fi to LTE), and a new show on a stream whose last show ended a moment
/// ago and is still served. Numbering continues; nothing is cut twice.
@Suite(.serialized) struct DiscontinuityTests {
    /// How many discontinuities a playlist has seen: tags listed plus those scrolled out.
    static func discontinuities(_ playlist: String) -> Int {
        playlist.components(separatedBy: "#EXT-X-DISCONTINUITY\n").count - 1
            + (playlist.firstMatch(of: /#EXT-X-DISCONTINUITY-SEQUENCE:(\d+)/).map { Int($0.1)! } ?? 0)
    }

    static func sequences(_ playlist: String) -> [Int] { playlist.matches(of: /\nseg-(\d+)\.m4s/).map { Int($0.1)! } }

    @Test func aDroppedPublisherAndANewShowEachStartANewTimeline() async throws {
        let stack = try StorecastStack()
        let key = try await stack.provisionStream(tenant: "shop", stream: "phone")
        try stack.start()
        try await stack.waitUntilReady()
        let playlistURL = "\(stack.playbackBase)/live/shop/phone/360p/index.m3u8"
        var playlist = ""
        func reload() async { playlist = await TestEnvironment.httpText(playlistURL) }

        // The phone publishes, then loses its network (no deleteStream, the socket just dies)
        // and reconnects with a fresh encoder whose timestamps start at 0 again.
        let first = try EndToEndTests.publisher(url: stack.rtmpURL(key: key), seconds: 30, logDirectory: stack.logDirectory)
        defer { first.stop(grace: 1) }
        let live = await StorecastStack.eventually(timeout: .seconds(30)) { await reload(); return Self.sequences(playlist).count >= 2 }
        #expect(live, "the show is live:\n\(playlist)\n\(stack.logs())")
        let before = Self.sequences(playlist).last ?? 0
        first.kill()
        // While the publisher is gone (inside ingest's 10 s reconnect window, so the show has not
        // ended), a blocking reload for a segment that does not come gives up after three target
        // durations with 503 and a message saying why.
        let want = (Self.sequences(playlist).last ?? 0) + 2
        let waited = try #require(await TestEnvironment.httpExchange("\(playlistURL)?_HLS_msn=\(want)", timeout: 20))
        #expect(waited.status == 503 && waited.seconds >= 5, "\(waited.status) after \(waited.seconds) s")
        #expect(String(decoding: waited.body, as: UTF8.self).contains("the publisher may have stalled"), "\(String(decoding: waited.body, as: UTF8.self))")
        let second = try EndToEndTests.publisher(url: stack.rtmpURL(key: key), seconds: 8, logDirectory: stack.logDirectory)
        defer { second.stop(grace: 1) }
        let cut = await StorecastStack.eventually(timeout: .seconds(30)) {
            await reload()
            return Self.discontinuities(playlist) >= 1 && (Self.sequences(playlist).last ?? 0) >= before + 2
        }
        #expect(cut, "the reconnect starts a new timeline with EXT-X-DISCONTINUITY:\n\(playlist)\n\(stack.logs())")
        #expect(Self.discontinuities(playlist) == 1, "one cut for one reconnect:\n\(playlist)")
        #expect(!playlist.contains("#EXT-X-ENDLIST"), "a reconnect does not end the show")
        let numbers = Self.sequences(playlist)
        #expect(numbers == Array((numbers.first ?? 0)...(numbers.last ?? 0)), "numbering continues: \(numbers)")

        // That publisher stops cleanly: the show ends (ENDLIST) and is still served. A new show
        // on the same stream within the retention continues the package with a second cut.
        _ = await second.wait(timeout: 20)
        let ended = await StorecastStack.eventually(timeout: .seconds(20)) { await reload(); return playlist.hasSuffix("#EXT-X-ENDLIST\n") }
        #expect(ended, "the show ended:\n\(playlist)")
        let lastOfShow = Self.sequences(playlist).last ?? 0
        let third = try EndToEndTests.publisher(url: stack.rtmpURL(key: key), seconds: 8, logDirectory: stack.logDirectory)
        defer { third.stop(grace: 1) }
        let again = await StorecastStack.eventually(timeout: .seconds(30)) {
            await reload()
            return !playlist.contains("#EXT-X-ENDLIST") && (Self.sequences(playlist).last ?? 0) > lastOfShow
        }
        #expect(again, "the new show plays on:\n\(playlist)\n\(stack.logs())")
        #expect(Self.discontinuities(playlist) == 2, "the new show's timeline is cut from the last one's:\n\(playlist)")
        let firstOfNew = try #require(playlist.range(of: "\nseg-\(lastOfShow).m4s\n").map { String(playlist[$0.upperBound...]) }, "\(playlist)")
        #expect(firstOfNew.hasPrefix("#EXT-X-DISCONTINUITY\n"), "the cut sits right after the last show's last segment:\n\(playlist)")
        _ = await stack.stop()
    }
}

/// A live stream whose media stop reaching the packager without a StreamEnd (here: the only
/// transcoder is killed while the seller keeps publishing) is ended by the packager after its
/// idle end (`--idle-end`, 30 s by default), so players get ENDLIST instead of a playlist frozen
/// for good.
@Suite(.serialized) struct IdleEndTests {
    @Test func aStreamWithoutMediaForItsIdleEndIsEnded() async throws {
        let stack = try StorecastStack()
        let key = try await stack.provisionStream(tenant: "shop", stream: "stalled")
        // Ended after 8 s without media here (30 s by default: the test waits less).
        try stack.start(packagerArguments: ["--idle-end", "8"])
        try await stack.waitUntilReady()
        let publisher = try EndToEndTests.publisher(url: stack.rtmpURL(key: key), seconds: 60, logDirectory: stack.logDirectory)
        defer { publisher.stop(grace: 1) }
        let playlistURL = "\(stack.playbackBase)/live/shop/stalled/360p/index.m3u8"
        var playlist = ""
        let live = await StorecastStack.eventually(timeout: .seconds(30)) {
            playlist = await TestEnvironment.httpText(playlistURL)
            return playlist.contains("#EXTINF")
        }
        #expect(live, "the show is live:\n\(stack.logs())")
        stack.service("storecast-transcoder")?.kill()
        try await Task.sleep(for: .seconds(5))
        playlist = await TestEnvironment.httpText(playlistURL)
        #expect(!playlist.contains("#EXT-X-ENDLIST"), "not ended before 8 s without media")
        let ended = await StorecastStack.eventually(timeout: .seconds(12)) {
            playlist = await TestEnvironment.httpText(playlistURL)
            return playlist.hasSuffix("#EXT-X-ENDLIST\n")
        }
        #expect(ended, "ended after 8 s without media:\n\(playlist)")
        #expect((stack.service("storecast-packager")?.log ?? "").contains("no media for 8 s"))
        #expect(publisher.isRunning, "the seller was still publishing all along")
        _ = await stack.stop()
    }
}
