import Foundation
import Testing

/// HEAD on the control API (RFC 9110 9.3.2), against the real `storecast-api`: each answered as
/// its GET (the same status, type and length, under the same authentication and tenant
/// isolation) with nothing after the head on the wire. Before, every HEAD got 404.
@Suite(.serialized) struct HeadRequestTests {
    @Test func aHeadIsAnsweredAsItsGetWithoutTheBody() async throws {
        let api = try await TenantAPITests.API()
        defer { api.stop() }
        let admin = TestEnvironment.adminToken
        for tenant in ["shop", "other"] {
            #expect(await api.call("POST", "/v1/tenants", json: #"{"slug":"\#(tenant)"}"#, token: admin).status == 201)
            #expect(await api.call("POST", "/v1/tenants/\(tenant)/streams", json: #"{"slug":"live"}"#, token: admin).status == 201)
        }
        let otherKey = try await api.key("other", scopes: ["streams:read"]).text
        let port = try #require(Int(api.base.split(separator: ":").last ?? ""))

        let golden: [(path: String, token: String?, status: Int)] = [
            ("/healthz", nil, 200),
            ("/openapi.yaml", nil, 200),
            ("/v1/tenants/shop/streams/live", admin, 200),
            ("/v1/tenants/shop/streams/live", nil, 401),
            ("/v1/tenants/shop/streams/live", otherKey, 404),  // another tenant's key: 404, never 403
            ("/v1/tenants/shop/streams/nope", admin, 404),
            ("/nowhere", nil, 404),
        ]
        for row in golden {
            let headers = row.token.map { ["Authorization": "Bearer \($0)"] } ?? [:]
            let get = try #require(await TestEnvironment.streamedGet(port: port, path: row.path, timeout: 10, headers: headers), "GET \(row.path)")
            let head = try #require(await TestEnvironment.streamedGet(port: port, path: row.path, timeout: 10, method: "HEAD", headers: headers), "HEAD \(row.path)")
            #expect(get.status == row.status && head.status == row.status, "\(row.path): GET \(get.status), HEAD \(head.status), expected \(row.status)")
            #expect(!get.body.isEmpty, "\(row.path): the GET has a body")
            #expect(head.wireBodyBytes == 0, "\(row.path): nothing follows the HEAD's head, \(head.wireBodyBytes) bytes did")
            #expect(head.headers["content-type"] == get.headers["content-type"], "\(row.path): \(head.headers) against \(get.headers)")
            #expect(head.headers["content-length"] == get.headers["content-length"], "\(row.path): the GET's length: \(head.headers) against \(get.headers)")
        }

        // The events stream: its HEAD answers at once, without starting the stream.
        let events = try #require(await TestEnvironment.streamedGet(port: port, path: "/v1/tenants/shop/streams/live/events", timeout: 5, method: "HEAD"))
        #expect(events.status == 200 && events.headers["content-type"]?.hasPrefix("text/event-stream") == true, "\(events.status) \(events.headers)")
        #expect(events.wireBodyBytes == 0 && events.closed, "the answer ends (the server closed the connection): \(events.closed)")
    }
}
