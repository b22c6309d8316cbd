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
}
