import Foundation
import PostgresClient
import Testing

/// The control API against a real PostgreSQL: what it must refuse, and what its refusals must
/// not carry.
@Suite(.serialized) struct ControlAPITests {
    @Test func anExistingTenantIsNeverRenamedAndRefusalsCarryNoDatabaseText() async throws {
        let stack = try StorecastStack()
        _ = try await stack.provisionStream(tenant: "shop", stream: "launch")
        try stack.start()
        try await stack.waitUntilReady()
        let api = "http://127.0.0.1:\(stack.apiPort)/v1"
        let db = PostgresExecutor(conninfo: stack.database)
        defer { db.shutdown() }

        // Creating a tenant that exists is a conflict, and changes nothing (it renamed it, 201).
        let again = try #require(await TestEnvironment.http("POST", "\(api)/tenants", json: #"{"slug":"shop","name":"Taken Over"}"#))
        let againBody = String(decoding: again.body, as: UTF8.self)
        #expect(again.status == 409 && againBody.contains(#""code":"conflict""#), "\(again.status) \(againBody)")
        let name = try await db.execute("SELECT name FROM tenants WHERE slug = 'shop'")
        #expect(name.value(0, "name") == "shop", "the tenant kept its name: \(name.rows)")
        let fresh = try #require(await TestEnvironment.http("POST", "\(api)/tenants", json: #"{"slug":"new-shop"}"#))
        #expect(fresh.status == 201, "\(fresh.status)")

        // A row the database refuses (a CHECK constraint): 400 with a JSON error, without the
        // server's "Failing row contains (…)" text that quotes the row.
        let refused = try #require(await TestEnvironment.http("POST", "\(api)/tenants", json: #"{"slug":"neg","name":"secret-name","maxConcurrentStreams":-1}"#))
        let refusedBody = String(decoding: refused.body, as: UTF8.self)
        #expect(refused.status == 400 && refusedBody.contains(#""error""#), "\(refused.status) \(refusedBody)")
        #expect(!refusedBody.contains("Failing row") && !refusedBody.contains("secret-name") && !refusedBody.contains("violates"), "\(refusedBody)")
        _ = await stack.stop()
    }

    /// Fair share (issue 23): a tenant's largest source is set over the API, and a publish over
    /// it is refused with the reason while one within it plays.
    @Test func aSourceOverTheTenantsLimitIsRefused() async throws {
        let stack = try StorecastStack()
        let small = try await stack.provisionStream(tenant: "shop", stream: "small")
        let big = try await stack.provisionStream(tenant: "shop", stream: "big")
        try stack.start()
        try await stack.waitUntilReady()
        let api = "http://127.0.0.1:\(stack.apiPort)/v1/tenants"
        #expect(await TestEnvironment.http("PUT", "\(api)/shop/source-limits", json: #"{"maxShortSide": 100000, "maxFrameRate": 30}"#)?.status == 400)
        #expect(await TestEnvironment.http("PUT", "\(api)/nobody/source-limits", json: #"{"maxShortSide": 240, "maxFrameRate": 30}"#)?.status == 404)
        #expect(await TestEnvironment.http("PUT", "\(api)/shop/source-limits", json: #"{"maxShortSide": 240, "maxFrameRate": 30}"#)?.status == 200)
        let ok = try EndToEndTests.publisher(url: stack.rtmpURL(key: small), seconds: 20, logDirectory: stack.logDirectory, size: "426x240", name: "small")
        let over = try EndToEndTests.publisher(url: stack.rtmpURL(key: big), seconds: 20, logDirectory: stack.logDirectory, size: "640x360", name: "big")
        defer { ok.stop(grace: 1); over.stop(grace: 1) }
        let plays = await StorecastStack.eventually(timeout: .seconds(20)) {
            await TestEnvironment.httpGet("\(stack.playbackBase)/live/shop/small/master.m3u8")?.status == 200
        }
        #expect(plays, "the source within the limit plays:\n\(stack.logs())")
        let refused = await StorecastStack.eventually(timeout: .seconds(10)) {
            stack.service("storecast-ingest")?.log.contains("this account takes at most 240p") ?? false
        }
        #expect(refused, "the source over the limit is refused with the reason:\n\(stack.service("storecast-ingest")?.log.suffix(3000) ?? "")")
        #expect(await TestEnvironment.httpGet("\(stack.playbackBase)/live/shop/big/master.m3u8")?.status == 404, "nothing of it is packaged")
        _ = await stack.stop()
    }

    /// A leaked stream key is rotated (issue 16): the old key stops at once by default, or
    /// publishes on for the grace period the caller chose; the new one publishes.
    @Test func aRotatedStreamKeyPublishesOnlyWithinItsGrace() async throws {
        let stack = try StorecastStack()
        let first = try await stack.provisionStream(tenant: "shop", stream: "live")
        try stack.start()
        try await stack.waitUntilReady()
        let api = "http://127.0.0.1:\(stack.apiPort)/v1/tenants/shop/streams/live/rotate-key"
        func rotate(grace: Int) async throws -> String {
            let r = try #require(await TestEnvironment.http("POST", api, json: #"{"graceSeconds":\#(grace)}"#))
            let body = String(decoding: r.body, as: UTF8.self)
            #expect(r.status == 200 && body.contains("publishURL") == true && body.contains("previousKeyValidUntil") == (grace > 0), "\(r.status) \(body)")
            return try #require(body.firstMatch(of: /"streamKey":"([^"]+)"/).map { String($0.1) }, "\(body)")
        }
        let ingestLog = { stack.service("storecast-ingest")?.log ?? "" }
        /// Whether a publish with `key` starts (ingest logs each start).
        func publishes(_ key: String, _ name: String) async throws -> Bool {
            let before = ingestLog().components(separatedBy: "publish started").count
            let publisher = try EndToEndTests.publisher(url: stack.rtmpURL(key: key), seconds: 4, logDirectory: stack.logDirectory, size: "426x240", name: name)
            defer { publisher.stop(grace: 1) }
            return await StorecastStack.eventually(timeout: .seconds(12)) { ingestLog().components(separatedBy: "publish started").count > before }
        }
        /// Whether a publish with `key` is refused as an unknown key.
        func refused(_ key: String, _ name: String) async throws -> Bool {
            let before = ingestLog().components(separatedBy: "publish refused: unknown stream key").count
            let publisher = try EndToEndTests.publisher(url: stack.rtmpURL(key: key), seconds: 3, logDirectory: stack.logDirectory, size: "426x240", name: name)
            defer { publisher.stop(grace: 1) }
            return await StorecastStack.eventually(timeout: .seconds(10)) { ingestLog().components(separatedBy: "publish refused: unknown stream key").count > before }
        }
        let second = try await rotate(grace: 0)
        #expect(try await refused(first, "old-key"), "the rotated-out key is refused at once:\n\(ingestLog().suffix(2000))")
        #expect(try await publishes(second, "new-key"), "the new key publishes:\n\(stack.logs())")
        // Rotated with a grace period, the key before still publishes.
        let third = try await rotate(grace: 300)
        try await Task.sleep(for: .seconds(2))
        #expect(try await publishes(second, "within-grace"), "the previous key publishes during its grace:\n\(ingestLog().suffix(2000))")
        // A grace runs out: rotated with 2 s of it, the key before is refused once they are over.
        _ = try await rotate(grace: 2)
        try await Task.sleep(for: .seconds(4))
        #expect(try await refused(third, "after-grace"), "the previous key is refused after its grace:\n\(ingestLog().suffix(2000))")
        _ = await stack.stop()
    }

    /// A stream's settings reach its players and its publisher (issue 16): in standard latency
    /// mode its media playlists list whole segments only, and with a 1 s reconnect window a
    /// publisher that drops ends its session at once (the ingest's own window is 10 s).
    @Test func aStreamsSettingsReachItsPlayersAndItsPublisher() async throws {
        let stack = try StorecastStack()
        let key = try await stack.provisionStream(tenant: "shop", stream: "live")
        try stack.start()
        try await stack.waitUntilReady()
        let patched = await TestEnvironment.http("PATCH", "http://127.0.0.1:\(stack.apiPort)/v1/tenants/shop/streams/live",
                                                 json: #"{"latencyMode":"standard","reconnectWindowSeconds":1}"#)
        #expect(patched?.status == 200, "\(patched.map { String(decoding: $0.body, as: UTF8.self) } ?? "no answer")")
        let publisher = try EndToEndTests.publisher(url: stack.rtmpURL(key: key), seconds: 60, logDirectory: stack.logDirectory, size: "426x240")
        defer { publisher.stop(grace: 1) }
        let base = "\(stack.playbackBase)/live/shop/live"
        var variants: [(resolution: String, uri: String)] = []
        #expect(await StorecastStack.eventually(timeout: .seconds(20)) {
            variants = EndToEndTests.variants(await TestEnvironment.httpText("\(base)/master.m3u8"))
            return !variants.isEmpty
        }, "the show plays:\n\(stack.logs())")
        for v in variants {
            var playlist = ""
            #expect(await StorecastStack.eventually(timeout: .seconds(10)) {
                playlist = await TestEnvironment.httpText("\(base)/\(v.uri)")
                return playlist.contains("#EXTINF")
            })
            #expect(!playlist.contains("#EXT-X-PART") && !playlist.contains("CAN-BLOCK-RELOAD"), "\(v.uri) lists whole segments only:\n\(playlist)")
        }
        // The publisher drops (killed: no unpublish) and does not come back.
        let db = PostgresExecutor(conninfo: stack.database)
        defer { db.shutdown() }
        publisher.kill()
        try await Task.sleep(for: .seconds(5))
        let session = try await db.execute("SELECT end_reason FROM sessions ORDER BY id DESC LIMIT 1")
        #expect(session.value(0, "end_reason") == "disconnected", "5 s after the drop the session ended (its window is 1 s, the ingest's 10 s): \(session.value(0, "end_reason") ?? "still open")")
        _ = await stack.stop()
    }
}
