import Foundation
import Testing

/// Private streams on the real stack: the API issues tokens, the packager checks every playlist,
/// segment and part request, writes the token into the URIs it hands out, and counts denials.
@Suite(.serialized) struct PlaybackAccessTests {
    @Test func privateStreamNeedsATokenOnEveryRequest() async throws {
        let stack = try StorecastStack()
        let key = try await stack.provisionStream(tenant: "shop", stream: "vip")
        let publicKey = try await stack.provisionStream(tenant: "shop", stream: "open")
        try stack.start()
        try await stack.waitUntilReady()
        let api = "http://127.0.0.1:\(stack.apiPort)/v1/tenants/shop/streams"
        let bad = await TestEnvironment.http("PUT", "\(api)/vip/visibility", json: #"{"visibility": "secret"}"#)
        #expect(bad?.status == 400)
        #expect(await TestEnvironment.http("PUT", "\(api)/vip/visibility", json: #"{"visibility": "private"}"#)?.status == 200)
        #expect(await TestEnvironment.http("POST", "\(api)/nope/playback-tokens", json: "{}")?.status == 404)
        #expect(await TestEnvironment.http("POST", "\(api)/vip/playback-tokens", json: #"{"ttlSeconds": 0}"#)?.status == 400)
        let issued = try #require(await TestEnvironment.http("POST", "\(api)/vip/playback-tokens", json: #"{"ttlSeconds": 600}"#))
        #expect(issued.status == 201)
        let body = try #require(try JSONSerialization.jsonObject(with: Data(issued.body)) as? [String: Any])
        let token = try #require(body["token"] as? String)
        #expect((body["playbackURL"] as? String)?.hasSuffix("/live/shop/vip/master.m3u8?token=\(token)") == true)

        let publisher = try EndToEndTests.publisher(url: stack.rtmpURL(key: key), seconds: 25, logDirectory: stack.logDirectory)
        let openPublisher = try EndToEndTests.publisher(url: stack.rtmpURL(key: publicKey), seconds: 25, logDirectory: stack.logDirectory)
        defer { publisher.stop(grace: 1); openPublisher.stop(grace: 1) }
        let base = "\(stack.playbackBase)/live/shop/vip"
        let ready = await StorecastStack.eventually(timeout: .seconds(25)) {
            let vip = await TestEnvironment.httpGet("\(base)/master.m3u8?token=\(token)")?.status
            let open = await TestEnvironment.httpGet("\(stack.playbackBase)/live/shop/open/master.m3u8")?.status
            return vip == 200 && open == 200
        }
        #expect(ready, "both streams play:\n\(stack.logs())")
        // The origin's index names public shows only (issue 23: it listed private ones).
        let index = await TestEnvironment.httpText("\(stack.playbackBase)/")
        #expect(index.contains("shop/open") && !index.contains("shop/vip"), "\(index)")

        // With the token: every URI the playlists hand out carries it, and each of them plays.
        let master = String(decoding: try #require(await TestEnvironment.httpGet("\(base)/master.m3u8?token=\(token)")).body, as: UTF8.self)
        #expect(master.contains("360p/index.m3u8?token=\(token)") && master.contains("audio/index.m3u8?token=\(token)"), "\(master)")
        // The variant as the master names it (under the generation's directory).
        let variant = try #require(master.split(separator: "\n").first { $0.contains("/360p/index.m3u8") }.map(String.init), "\(master)")
        let generation = String(variant.prefix { $0 != "/" })
        let media = String(decoding: try #require(await TestEnvironment.httpGet("\(base)/\(variant)")).body, as: UTF8.self)
        #expect(media.contains("init.mp4?token=\(token)"))
        let part = try #require(media.firstMatch(of: /URI="(part-\d+\.\d+\.m4s\?token=[^"]+)"/).map { String($0.1) }, "\(media)")
        let segment = try #require(media.split(separator: "\n").first { $0.hasPrefix("seg-") }.map(String.init))
        #expect(segment.hasSuffix("?token=\(token)"))
        #expect(media.contains("#EXT-X-RENDITION-REPORT:URI=\"../480p/index.m3u8?token=\(token)\""))
        var fetched = 0  // media bytes this viewer got: egress must count at least these
        for path in ["\(generation)/360p/\(part)", "360p/\(segment)", "\(generation)/360p/init.mp4?token=\(token)", "thumbnail.jpg?token=\(token)"] {
            let r = await TestEnvironment.httpGet("\(base)/\(path)")
            #expect(r?.status == 200 || (path.hasPrefix("thumbnail") && r?.status == 404), "\(path): \(String(describing: r?.status))")
            if r?.status == 200 { fetched += r?.body.count ?? 0 }
        }

        // Without it, or with a wrong one: 401 or 403 with a message, for playlists and media alike.
        let stripped = part.split(separator: "?").first.map(String.init) ?? part
        let forged = "1999999999.JFB3C-ZlVEQniKUjk0Tx459h8J9AAI9LMrSFTPTvMSU"
        let refusals: [(String, Int, String)] = [
            ("master.m3u8", 401, "private"),
            ("360p/index.m3u8", 401, "private"),
            ("360p/\(stripped)", 401, "private"),
            ("360p/init.mp4", 401, "private"),
            ("\(generation)/360p/index.m3u8", 401, "private"),
            ("\(generation)/360p/\(stripped)", 401, "private"),
            ("master.m3u8?token=\(forged)", 403, "not issued for this stream"),
            ("360p/\(stripped)?token=garbage", 403, "not of the form"),
        ]
        for (path, status, words) in refusals {
            let r = try #require(await TestEnvironment.httpGet("\(base)/\(path)"))
            #expect(r.status == status, "\(path)")
            #expect(String(decoding: r.body, as: UTF8.self).contains(words), "\(path): \(String(decoding: r.body, as: UTF8.self))")
        }
        // A public stream needs nothing, and gets no token written into its URIs.
        let open = try #require(await TestEnvironment.httpGet("\(stack.playbackBase)/live/shop/open/master.m3u8"))
        #expect(open.status == 200 && !String(decoding: open.body, as: UTF8.self).contains("token="))

        // Denials reach the metrics collector, by reason.
        let counted = await StorecastStack.eventually(timeout: .seconds(15)) {
            let text = await TestEnvironment.httpText("http://127.0.0.1:\(stack.metricsPort)/metrics")
            return text.contains("storecast_packager_playback_denied_total") && text.contains("reason=\"missing\"") && text.contains("reason=\"bad_signature\"")
        }
        #expect(counted, "denials counted in the collector's /metrics")
        // Viewers and egress per stream: this test is one viewer of each stream.
        var exposition = ""
        let viewers = await StorecastStack.eventually(timeout: .seconds(20)) {
            exposition = await TestEnvironment.httpText("http://127.0.0.1:\(stack.metricsPort)/metrics")
            return exposition.split(separator: "\n").contains { $0.hasPrefix("storecast_packager_viewers{") && $0.contains("stream=\"shop/vip\"") && $0.split(separator: " ").last.flatMap { Double($0) } == 1 }
        }
        #expect(viewers, "one viewer of shop/vip: \(exposition.split(separator: "\n").filter { $0.contains("viewers") || $0.contains("egress") })")
        let egress = exposition.split(separator: "\n").first { $0.hasPrefix("storecast_packager_egress_bytes_total{") && $0.contains("stream=\"shop/vip\"") }
        #expect(fetched > 10_000 && (egress?.split(separator: " ").last.flatMap { Double($0) } ?? 0) >= Double(fetched),
                "egress bytes of shop/vip count the \(fetched) media bytes fetched: \(String(describing: egress))")

        // Rotating the tenant's secret (issue 23): with a grace period the old token plays on
        // beside new ones; after a rotation without grace, tokens of the secret before stop
        // (within the packagers' 10 s access cache).
        let tenantAPI = "http://127.0.0.1:\(stack.apiPort)/v1/tenants/shop"
        #expect(await TestEnvironment.http("POST", "\(tenantAPI)/playback-secret/rotate", json: #"{"graceSeconds": -1}"#)?.status == 400)
        #expect(await TestEnvironment.http("POST", "http://127.0.0.1:\(stack.apiPort)/v1/tenants/nobody/playback-secret/rotate", json: "{}")?.status == 404)
        #expect(await TestEnvironment.http("POST", "\(tenantAPI)/playback-secret/rotate", json: #"{"graceSeconds": 600}"#)?.status == 200)
        @Sendable func mint() async throws -> String {
            let r = try #require(await TestEnvironment.http("POST", "\(api)/vip/playback-tokens", json: #"{"ttlSeconds": 600}"#))
            return try #require((try JSONSerialization.jsonObject(with: Data(r.body)) as? [String: Any])?["token"] as? String)
        }
        let second = try await mint()
        #expect(second != token)
        try await Task.sleep(for: .milliseconds(1200))  // a fresh secret is read again at most once a second
        #expect(await TestEnvironment.httpGet("\(base)/master.m3u8?token=\(second)")?.status == 200, "a token of the new secret plays")
        #expect(await TestEnvironment.httpGet("\(base)/master.m3u8?token=\(token)")?.status == 200, "the old token plays during the grace period")
        #expect(await TestEnvironment.http("POST", "\(tenantAPI)/playback-secret/rotate", json: #"{"graceSeconds": 0}"#)?.status == 200)
        let third = try await mint()
        try await Task.sleep(for: .seconds(11))
        #expect(await TestEnvironment.httpGet("\(base)/master.m3u8?token=\(second)")?.status == 403, "a rotation without grace stops the previous secret's tokens")
        #expect(await TestEnvironment.httpGet("\(base)/master.m3u8?token=\(token)")?.status == 403)
        #expect(await TestEnvironment.httpGet("\(base)/master.m3u8?token=\(third)")?.status == 200)
        _ = await stack.stop()
    }
}
