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
}
