import ControlPlane
import Foundation
import Logging
import PostgresClient
import Synchronization
import StorecastRuntime
import Testing

/// Webhooks (issue 16) against a real receiver that verifies every request with the Standard
/// Webhooks library from PyPI (Tests/Tools/webhook_receiver.py).
@Suite(.serialized) struct WebhookTests {
    /// The receiver, on its own port, writing what it got to a file.
    final class Receiver: @unchecked Sendable {
        let port: Int
        let log: String
        let logDirectory: URL
        private(set) var process: ServiceProcess?
        var url: String { "http://127.0.0.1:\(port)/hook" }

        init(logDirectory: URL) throws {
            port = try TestEnvironment.freePort()
            log = logDirectory.appendingPathComponent("receiver-\(port).jsonl").path
            self.logDirectory = logDirectory
        }

        /// Starts it, verifying with `secret` (the endpoint's, known once the endpoint is made).
        func start(secret: String, options: [String] = []) async throws {
            process = try ServiceProcess(name: "webhook-receiver-\(port)", executable: try TestEnvironment.testTool("venv/bin/python"), arguments: [
                TestEnvironment.repositoryRoot.appendingPathComponent("Tests/Tools/webhook_receiver.py").path, "\(port)", secret, log] + options,
                logDirectory: logDirectory)
            let url = "http://127.0.0.1:\(port)/"
            let up = await StorecastStack.eventually(timeout: .seconds(10)) { await TestEnvironment.httpGet(url) != nil }
            if !up { throw TestEnvironment.Failure(description: "the receiver did not start:\n\(process?.log ?? "")") }
        }

        /// Every request so far, in order ("holding" lines are requests not yet answered).
        var requests: [[String: Any]] {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            return text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        }
    }

    static func endpoint(_ api: String, tenant: String, url: String, eventTypes: [String] = []) async throws -> (id: String, secret: String) {
        let types = eventTypes.map { "\"\($0)\"" }.joined(separator: ",")
        let made = try #require(await TestEnvironment.http("POST", "\(api)/v1/tenants/\(tenant)/webhooks", json: #"{"url":"\#(url)","eventTypes":[\#(types)]}"#))
        let body = String(decoding: made.body, as: UTF8.self)
        let id = try #require(body.firstMatch(of: /"id":"(ep_[a-z0-9]+)"/).map { String($0.1) }, "\(made.status) \(body)")
        let secret = try #require(body.firstMatch(of: /"secret":"(whsec_[^"]+)"/).map { String($0.1) }, "\(body)")
        return (id, secret)
    }

    /// A real show's events reach the receiver, verified, in order: connected, live, ended. The
    /// receiver fails the first three attempts of each message; each is retried with the same
    /// webhook-id until it answers 200. After a secret rotation with a grace period both
    /// signatures travel, so a receiver still on the old secret verifies.
    @Test func aShowsEventsReachTheReceiverSignedInOrderAndRetried() async throws {
        let stack = try StorecastStack()
        let key = try await stack.provisionStream(tenant: "shop", stream: "live")
        // Standard Webhooks' schedule, 300 times faster: 15 ms, 1 s, 6 s between attempts.
        try stack.start(apiArguments: ["--webhook-allow-private-networks", "--webhook-retry-scale", "0.003333"])
        try await stack.waitUntilReady()
        let api = "http://127.0.0.1:\(stack.apiPort)"
        let receiver = try Receiver(logDirectory: stack.logDirectory)
        defer { receiver.process?.stop() }
        let endpoint = try await Self.endpoint(api, tenant: "shop", url: receiver.url)
        try await receiver.start(secret: endpoint.secret, options: ["--fail-first", "3"])
        let rotated = try #require(await TestEnvironment.http("POST", "\(api)/v1/tenants/shop/webhooks/\(endpoint.id)/rotate-secret", json: #"{"graceSeconds":600}"#))
        #expect(rotated.status == 200 && String(decoding: rotated.body, as: UTF8.self).contains("previousSecretValidUntil"), "\(rotated.status)")

        let publisher = try EndToEndTests.publisher(url: stack.rtmpURL(key: key), seconds: 6, logDirectory: stack.logDirectory, size: "426x240")
        let delivered = { (type: String) -> Bool in receiver.requests.contains { $0["type"] as? String == type && $0["answer"] as? Int == 200 } }
        let all = await StorecastStack.eventually(timeout: .seconds(60)) { delivered("stream.connected") && delivered("stream.live") && delivered("stream.ended") }
        publisher.stop(grace: 1)
        let requests = receiver.requests
        #expect(all, "every event delivered: \(requests)\n\(stack.service("storecast-api")?.log.suffix(3000) ?? "")")
        #expect(requests.allSatisfy { $0["verified"] as? Bool == true }, "every request verifies with the old secret: \(requests)")
        #expect(requests.allSatisfy { $0["signatures"] as? Int == 2 }, "both secrets sign during the grace: \(requests.map { $0["signatures"] ?? "-" })")
        for type in ["stream.connected", "stream.live", "stream.ended"] {
            let attempts = requests.filter { $0["type"] as? String == type }
            #expect(attempts.map { $0["answer"] as? Int ?? 0 } == [500, 500, 500, 200], "\(type): three failures, then delivered: \(attempts)")
            #expect(Set(attempts.compactMap { $0["id"] as? String }).count == 1, "\(type): one webhook-id across its attempts")
        }
        let firsts = ["stream.connected", "stream.live", "stream.ended"].compactMap { t in requests.firstIndex { $0["type"] as? String == t } }
        #expect(firsts == firsts.sorted(), "first attempts in the order of the show: \(firsts)")
        let ended = requests.first { $0["type"] as? String == "stream.ended" }?["data"] as? [String: Any]
        #expect(ended?["tenant"] as? String == "shop" && ended?["stream"] as? String == "live" && (ended?["reason"] as? String)?.isEmpty == false, "\(ended ?? [:])")

        // The delivery log says the same.
        let log = String(decoding: try #require(await TestEnvironment.http("GET", "\(api)/v1/tenants/shop/webhooks/\(endpoint.id)/deliveries")).body, as: UTF8.self)
        #expect(log.contains(#""state":"delivered""#) && log.contains(#""attempts":4"#), "\(log)")
        // A page at a time, newest first: one delivery a page, then a last page whose next is null.
        let deliveries = "\(api)/v1/tenants/shop/webhooks/\(endpoint.id)/deliveries"
        let whole = (await EventStreamTests.object(deliveries + "?limit=200"))["deliveries"] as? [[String: Any]] ?? []
        var paged: [Int] = [], cursor: Any = "", pages = 0
        while let next = cursor as? String, pages <= whole.count {
            let page = await EventStreamTests.object(deliveries + "?limit=1" + (next.isEmpty ? "" : "&cursor=\(next)"))
            paged += (page["deliveries"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? Int }
            cursor = page["next"] ?? "missing"
            pages += 1
        }
        #expect(whole.count >= 3 && paged == whole.compactMap { $0["id"] as? Int } && paged == paged.sorted(by: >) && cursor is NSNull,
                "the log a page at a time: \(paged) against \(whole.compactMap { $0["id"] })")
        _ = await stack.stop()
    }

    /// The API killed with kill -9 while the receiver holds a request: once it is back, the
    /// event is sent again with the same webhook-id, so the receiver sees it exactly once by id.
    /// A receiver that answers 410 Gone has its endpoint disabled; a replay from the log sends a
    /// message again.
    @Test func anAPIKilledMidDeliveryStillDeliversAndGoneDisables() async throws {
        // Deliveries held 20 s (60 s by default), so the test waits less for the one the kill left.
        let api = try await TenantAPITests.API(arguments: ["--webhook-allow-private-networks", "--webhook-hold-seconds", "20"])
        defer { api.stop() }
        #expect(await api.call("POST", "/v1/tenants", json: #"{"slug":"shop"}"#, token: TestEnvironment.adminToken).status == 201)
        #expect(await api.call("POST", "/v1/tenants/shop/streams", json: #"{"slug":"live"}"#, token: TestEnvironment.adminToken).status == 201)
        let receiver = try Receiver(logDirectory: api.stack.logDirectory)
        defer { receiver.process?.stop() }
        let endpoint = try await Self.endpoint(api.base, tenant: "shop", url: receiver.url)
        try await receiver.start(secret: endpoint.secret, options: ["--hold-first", "4"])
        // An event, as ingest records it: in the transaction of the change (a session closing).
        let session = try #require(try await api.db.execute(
            "INSERT INTO sessions (stream_id, ingest_node, remote_addr) SELECT id, 'test', '127.0.0.1' FROM streams WHERE slug = 'live' RETURNING id").value(0, "id").flatMap(Int64.init))
        let stream = try #require(try await api.db.execute("SELECT id FROM streams").value(0, "id").flatMap(Int64.init))
        try await api.db.run { try StreamCatalog.closeSession($0, session, streamID: stream, reason: "the publisher left") }

        let holding = await StorecastStack.eventually(timeout: .seconds(10)) { receiver.requests.contains { $0["answer"] as? String == "holding" } }
        #expect(holding, "the receiver holds the first attempt: \(receiver.requests)")
        try await api.killAndRestart()
        let redelivered = await StorecastStack.eventually(timeout: .seconds(45)) { receiver.requests.contains { $0["n"] as? Int == 2 && $0["answer"] as? Int == 200 } }
        let requests = receiver.requests.filter { $0["answer"] as? String != "holding" }
        #expect(redelivered, "sent again after the restart: \(receiver.requests)")
        #expect(Set(requests.compactMap { $0["id"] as? String }).count == 1 && requests.allSatisfy { $0["type"] as? String == "stream.ended" }, "one message by id: \(requests)")
        // The receiver logs its answer before the API has written it down.
        var state: String?
        #expect(await StorecastStack.eventually(timeout: .seconds(5)) {
            state = try? await api.db.execute("SELECT state FROM webhook_deliveries").value(0, "state")
            return state == "delivered"
        }, "\(state ?? "no delivery")")

        // 410 Gone: the endpoint is turned off, with the reason.
        let gone = try await Self.endpoint(api.base, tenant: "shop", url: "http://127.0.0.1:\(receiver.port)/gone")
        _ = try await api.db.execute("SELECT storecast_emit(id, 'stream.live', '{}'::jsonb) FROM tenants")
        let disabled = await StorecastStack.eventually(timeout: .seconds(15)) {
            (try? await api.db.execute("SELECT disabled_reason FROM webhook_endpoints WHERE id = $1", [gone.id]).value(0, "disabled_reason"))??.contains("410") ?? false
        }
        #expect(disabled, "a 410 disables the endpoint")
        let listed = await api.call("GET", "/v1/tenants/shop/webhooks/\(gone.id)", token: TestEnvironment.adminToken)
        #expect(listed.body.contains("disabledAt"), "\(listed.body)")

        // A replay from the log sends the delivered message again, with its webhook-id.
        let first = try #require(try await api.db.execute("SELECT id, event_id FROM webhook_deliveries WHERE endpoint_id = $1 ORDER BY id LIMIT 1", [endpoint.id]))
        let (delivery, message) = (try #require(first.value(0, "id")), "msg_\(first.value(0, "event_id") ?? "")")
        let answered = { receiver.requests.filter { $0["id"] as? String == message && $0["answer"] as? Int == 200 }.count }
        let before = answered()
        let replay = await api.call("POST", "/v1/tenants/shop/webhooks/\(endpoint.id)/deliveries/\(delivery)/replay", token: TestEnvironment.adminToken)
        #expect(replay.status == 202 && replay.body.contains(#""messageId":"\#(message)""#), "\(replay.status) \(replay.body)")
        let replayed = await StorecastStack.eventually(timeout: .seconds(15)) { answered() > before }
        #expect(replayed, "\(receiver.requests)")
    }

    /// Events that become due together (a short show: connected, live and ended within one poll
    /// of the dispatcher) reach an endpoint one at a time, in the order they happened: the
    /// receiver holds each first request 1 s, and the next event is not sent until it answers.
    /// (They were sent side by side before, so the receiver saw them in any order.)
    @Test func anEndpointGetsItsEventsOneAtATimeInTheOrderTheyHappened() async throws {
        let api = try await TenantAPITests.API(arguments: ["--webhook-allow-private-networks"])
        defer { api.stop() }
        #expect(await api.call("POST", "/v1/tenants", json: #"{"slug":"shop"}"#, token: TestEnvironment.adminToken).status == 201)
        let (slow, quick) = (try Receiver(logDirectory: api.stack.logDirectory), try Receiver(logDirectory: api.stack.logDirectory))
        defer { slow.process?.stop(); quick.process?.stop() }
        let slowEndpoint = try await Self.endpoint(api.base, tenant: "shop", url: slow.url)
        let quickEndpoint = try await Self.endpoint(api.base, tenant: "shop", url: quick.url)
        try await slow.start(secret: slowEndpoint.secret, options: ["--hold-first", "1"])
        try await quick.start(secret: quickEndpoint.secret)
        let types = ["stream.connected", "stream.live", "stream.health_changed", "stream.ended"]
        // One transaction, so the dispatcher finds all four due at once.
        try await api.db.run { conn in
            try conn.transaction { for type in types { try conn.execute("SELECT storecast_emit(id, $1, '{}'::jsonb) FROM tenants", [type]) } }
        }
        let done = await StorecastStack.eventually(timeout: .seconds(20)) { slow.requests.filter { $0["answer"] as? Int == 200 }.count == types.count }
        let lines = slow.requests.map { "\($0["type"] as? String ?? "?") \($0["answer"] ?? "?")" }
        #expect(done, "\(lines)")
        #expect(lines == types.flatMap { ["\($0) holding", "\($0) 200"] }, "each event is sent once the one before it is answered: \(lines)")
        let quickTypes = quick.requests.compactMap { $0["type"] as? String }
        #expect(quickTypes == types, "the other endpoint gets them in order too: \(quickTypes)")
    }

    /// A receiver that never answers is given up on at 15 s and tried again; a busy one's
    /// `Retry-After` (an HTTP-date here) is waited out, though the schedule (300 times faster
    /// here) would have come back within 20 ms.
    @Test func aHungReceiverIsCutAtFifteenSecondsAndABusyOnesRetryAfterIsWaitedOut() async throws {
        let api = try await TenantAPITests.API(arguments: ["--webhook-allow-private-networks", "--webhook-retry-scale", "0.003333"])
        defer { api.stop() }
        #expect(await api.call("POST", "/v1/tenants", json: #"{"slug":"shop"}"#, token: TestEnvironment.adminToken).status == 201)
        let (hung, busy) = (try Receiver(logDirectory: api.stack.logDirectory), try Receiver(logDirectory: api.stack.logDirectory))
        defer { hung.process?.stop(); busy.process?.stop() }
        let hungEndpoint = try await Self.endpoint(api.base, tenant: "shop", url: hung.url)
        let busyEndpoint = try await Self.endpoint(api.base, tenant: "shop", url: busy.url)
        try await hung.start(secret: hungEndpoint.secret, options: ["--hold-first", "25"])
        try await busy.start(secret: busyEndpoint.secret, options: ["--busy-first", "1", "--retry-after-seconds", "3"])
        _ = try await api.db.execute("SELECT storecast_emit(id, 'stream.live', '{}'::jsonb) FROM tenants")
        let delivered = { (r: Receiver) in r.requests.contains { $0["n"] as? Int == 2 && $0["answer"] as? Int == 200 } }
        #expect(await StorecastStack.eventually(timeout: .seconds(40)) { delivered(hung) && delivered(busy) }, "\(hung.requests) \(busy.requests)")
        let at = { (r: Receiver, n: Int) in r.requests.first { $0["n"] as? Int == n && $0["answer"] as? Int != nil }?["at"] as? Double }
        let holding = hung.requests.first { $0["answer"] as? String == "holding" }?["at"] as? Double
        if let holding, let again = at(hung, 2) {
            #expect((14.5...20).contains(again - holding), "the hung attempt was cut at 15 s: the next came \(again - holding) s after it")
        } else {
            Issue.record("no hung attempt and retry: \(hung.requests)")
        }
        if let refused = at(busy, 1), let again = at(busy, 2) {
            #expect(again - refused >= 1.9, "Retry-After waited out: the next attempt came \(again - refused) s after the 503")
        } else {
            Issue.record("no 503 and retry: \(busy.requests)")
        }
        // The receiver's 200 reaches the test before the dispatcher has written it down, so the
        // log is read until it says so.
        var log = (status: 0, body: "")
        let recorded = await StorecastStack.eventually(timeout: .seconds(5)) {
            let answer = await api.call("GET", "/v1/tenants/shop/webhooks/\(hungEndpoint.id)/deliveries", token: TestEnvironment.adminToken)
            log = (answer.status, answer.body)
            return log.body.contains(#""state":"delivered""#) && log.body.contains(#""attempts":2"#)
        }
        #expect(recorded, "\(log.status) \(log.body)")
    }

    /// By default an endpoint may not point into the operator's networks (SSRF); the answer says why.
    @Test func endpointsInsideTheOperatorsNetworksAreRefused() async throws {
        let api = try await TenantAPITests.API()
        defer { api.stop() }
        #expect(await api.call("POST", "/v1/tenants", json: #"{"slug":"shop"}"#, token: TestEnvironment.adminToken).status == 201)
        let key = try await api.key("shop", scopes: ["webhooks"])
        for url in ["http://127.0.0.1:8088/v1/tenants", "http://169.254.169.254/latest/meta-data/", "http://10.0.0.7/hook", "http://localhost:5432/", "http://[::1]/x", "gopher://example.com/"] {
            let r = await api.call("POST", "/v1/tenants/shop/webhooks", json: #"{"url":"\#(url)"}"#, token: key.text)
            #expect(r.status == 400 && r.body.contains(#""field":"url""#) && r.body.contains("cannot receive webhooks"), "\(url): \(r.status) \(r.body)")
        }
        let bad = await api.call("POST", "/v1/tenants/shop/webhooks", json: #"{"url":"https://example.com/hook","eventTypes":["stream.exploded"]}"#, token: key.text)
        #expect(bad.status == 400 && bad.body.contains(#""field":"eventTypes""#), "\(bad.status) \(bad.body)")
        #expect(try await api.db.execute("SELECT count(*) AS n FROM webhook_endpoints").value(0, "n") == "0")
    }

    /// DNS rebinding: a name that resolves to a public address when it is checked and to an
    /// internal one when the sender connects. The dispatcher resolves once per attempt and
    /// connects to the address it checked. The endpoint's name here is one the system resolver
    /// does not know, so the delivery can only arrive if the sender used the checked address
    /// (the test's resolver stands in for DNS; the receiver, PostgreSQL and HTTP are real). The
    /// Host field still carries the endpoint's name. The same name resolving inside the
    /// operator's networks, with the default policy, is refused before any connection.
    @Test func aDeliveryGoesToTheAddressThatWasCheckedAndIsNotResolvedAgain() async throws {
        let api = try await TenantAPITests.API(arguments: ["--webhook-allow-private-networks"])
        defer { api.stop() }
        #expect(await api.call("POST", "/v1/tenants", json: #"{"slug":"shop"}"#, token: TestEnvironment.adminToken).status == 201)
        let receiver = try Receiver(logDirectory: api.stack.logDirectory)
        defer { receiver.process?.stop() }
        let name = "hooks.rebinding.invalid"
        #expect(NetworkAddressPolicy.resolve(name).isEmpty, "the system resolver does not know \(name)")
        let endpoint = try await Self.endpoint(api.base, tenant: "shop", url: "http://\(name):\(receiver.port)/hook")
        try await receiver.start(secret: endpoint.secret)
        api.process.stop()  // its own dispatcher would take the delivery; this test runs one in-process
        let lookups = Mutex<[String]>([])
        func dispatch(allowInternal: Bool) async throws {
            var settings = WebhookDispatcher.Settings()
            settings.allowInternalAddresses = allowInternal
            settings.resolve = { host in lookups.withLock { $0.append(host) }; return host == name ? ["127.0.0.1"] : [] }
            let dispatcher = WebhookDispatcher(database: api.db, settings: settings, logger: Logger(label: "test-webhooks"))
            _ = try await api.db.execute("SELECT storecast_emit(id, 'stream.live', '{}'::jsonb) FROM tenants")
            let run = Task { try await dispatcher.run() }
            _ = await StorecastStack.eventually(timeout: .seconds(10)) {
                (try? await api.db.execute("SELECT count(*) AS n FROM webhook_deliveries WHERE attempts = 0").value(0, "n")) == "0"
            }
            run.cancel()
            _ = try? await run.value
        }

        try await dispatch(allowInternal: false)
        let refused = try await api.db.execute("SELECT last_error FROM webhook_deliveries")
        #expect(refused.value(0, "last_error")?.contains("resolves to 127.0.0.1, inside the operator's networks") == true, "\(refused.rows)")
        #expect(receiver.requests.isEmpty, "nothing reached the receiver: \(receiver.requests)")
        #expect(lookups.withLock { $0 } == [name], "one lookup for the one attempt")

        lookups.withLock { $0 = [] }
        _ = try await api.db.execute("UPDATE webhook_deliveries SET state = 'failed'")  // its retry is not this phase's
        try await dispatch(allowInternal: true)
        let got = receiver.requests.filter { $0["answer"] as? Int == 200 }
        #expect(got.count == 1 && got.first?["host"] as? String == "\(name):\(receiver.port)", "delivered to the checked address, asking for the endpoint's name: \(receiver.requests)")
        #expect(lookups.withLock { $0 } == [name], "the sender resolved the name once, for the check, and not again to connect: \(lookups.withLock { $0 })")
    }

    /// The outbox does not grow for good: events older than 30 days go, unless something of
    /// theirs is still to be sent.
    @Test func oldEventsArePrunedButNotWhatIsStillPending() async throws {
        let api = try await TenantAPITests.API(arguments: ["--webhook-allow-private-networks"])
        defer { api.stop() }
        #expect(await api.call("POST", "/v1/tenants", json: #"{"slug":"shop"}"#, token: TestEnvironment.adminToken).status == 201)
        _ = try await Self.endpoint(api.base, tenant: "shop", url: "http://127.0.0.1:9/never")
        for _ in 0..<3 { _ = try await api.db.execute("SELECT storecast_emit(id, 'stream.live', '{}'::jsonb) FROM tenants") }
        let ids = try await api.db.execute("SELECT id FROM webhook_events ORDER BY id")
        let (old, oldPending, recent) = (ids.value(0, "id")!, ids.value(1, "id")!, ids.value(2, "id")!)
        _ = try await api.db.execute("UPDATE webhook_events SET created_at = now() - interval '31 days' WHERE id IN ($1::bigint, $2::bigint)", [old, oldPending])
        _ = try await api.db.execute("UPDATE webhook_deliveries SET state = 'failed' WHERE event_id IN ($1::bigint, $2::bigint)", [old, recent])
        _ = try await api.db.execute("UPDATE webhook_deliveries SET state = 'pending', next_attempt_at = now() + interval '1 day' WHERE event_id = $1::bigint", [oldPending])
        let pruned = try await api.db.run { try WebhookStore.prune($0) }
        let left = try await api.db.execute("SELECT id FROM webhook_events ORDER BY id")
        #expect(pruned == 1 && (0..<left.count).compactMap { left.value($0, "id") } == [oldPending, recent], "\(pruned) \(left.rows)")
    }
}
