import AsyncHTTPClient
import Dispatch
import Foundation
import Logging
import Metrics
import NIOCore
import PostgresClient
import ServiceLifecycle
import StorecastRuntime

/// Sends tenants' webhook events (issue 16), in the API process: takes due deliveries from
/// PostgreSQL (held 60 s each, up to two per endpoint, and none of an endpoint with one in
/// flight, so any number of API processes share the work, one slow receiver does not take every
/// slot, and a killed one's deliveries are taken again), sends each endpoint's one at a time in
/// the order the events happened (a retry waits on its schedule; later events do not wait for
/// it), posts each with Standard Webhooks' headers and a 15 s deadline,
/// follows no redirect, refuses internal addresses (``NetworkAddressPolicy``) unless the operator
/// allows them, connects to the very address it checked (async-http-client's `dnsOverride`: a
/// name that resolves elsewhere the second time, DNS rebinding, is never asked again), and
/// records what ``WebhookRetryPolicy`` decides. On SIGTERM it stops taking work
/// and lets the attempts in flight finish.
public struct WebhookDispatcher: Service {
    public struct Settings: Sendable {
        /// Send to loopback, private and link-local addresses too (development, tests).
        public var allowInternalAddresses = false
        /// Shrinks the retry schedule (tests); 1 is Standard Webhooks' schedule.
        public var retryScale = 1.0
        /// How long an attempt holds its delivery (seconds): DNS, the 15 s deadline and a margin;
        /// a killed API's deliveries are taken again after it.
        public var holdSeconds = 60
        /// Resolves an endpoint's host (getaddrinfo; tests give a name of their own).
        public var resolve: @Sendable (String) -> [String] = NetworkAddressPolicy.resolve
        public init() {}
    }

    static let batch = 16

    let database: PostgresExecutor
    let settings: Settings
    let logger: Logger
    private let outcomes = (delivered: Counter(label: "storecast_api_webhook_deliveries_total", dimensions: [("outcome", "delivered")]),
                            retried: Counter(label: "storecast_api_webhook_deliveries_total", dimensions: [("outcome", "retry")]),
                            failed: Counter(label: "storecast_api_webhook_deliveries_total", dimensions: [("outcome", "failed")]),
                            disabled: Counter(label: "storecast_api_webhook_deliveries_total", dimensions: [("outcome", "endpoint_disabled")]))

    public init(database: PostgresExecutor, settings: Settings, logger: Logger) {
        self.database = database
        self.settings = settings
        self.logger = logger
    }

    public func run() async throws {
        let hold = max(20, settings.holdSeconds)
        var warned = false
        var nextPrune = ContinuousClock.now + .seconds(60)
        // Woken when an event is recorded (NOTIFY on `storecast_events`; a burst wakes it once,
        // at most every 100 ms), and every 500 ms for retries that come due and whatever a lost
        // notification left.
        let listener = PostgresListener(conninfo: database.conninfo, channel: WebhookOutbox.channel, name: "api-webhooks",
                                        fallback: 0.5, disconnectedFallback: 0.5, minimumGap: 0.1,
                                        onConnectionChange: ListenerConnectionLog.callback(logger, what: "webhook events", pollingWhileDown: "every 500 ms"))
        defer { listener.stop() }
        var wakeups = listener.wakeups.makeAsyncIterator()
        await withGracefulShutdownHandler {
            while !Task.isShuttingDownGracefully && !Task.isCancelled {
                if ContinuousClock.now >= nextPrune {
                    nextPrune = ContinuousClock.now + .seconds(3600)
                    if let pruned = try? await database.run({ try WebhookStore.prune($0) }), pruned > 0 {
                        logger.info("old webhook events pruned", metadata: ["events": "\(pruned)", "older_than_days": "\(WebhookStore.retentionDays)"])
                    }
                }
                let due: [WebhookStore.Due]
                do {
                    due = try await database.run { try WebhookStore.claim($0, limit: Self.batch, hold: hold) }
                    warned = false
                } catch {
                    if !warned { logger.warning("webhook deliveries wait: the database is unreachable", metadata: ["error": "\(error)"]) }
                    warned = true
                    due = []
                }
                if due.isEmpty {
                    guard await wakeups.next() != nil else { break }
                    continue
                }
                // Endpoints side by side; each endpoint's deliveries in turn (`claim` sorts them so).
                await withTaskGroup(of: Void.self) { group in
                    for (_, turns) in Dictionary(grouping: due, by: \.endpointID) {
                        group.addTask { for delivery in turns { await self.deliver(delivery) } }
                    }
                }
            }
        } onGracefulShutdown: {
            listener.stop()
        }
        logger.info("webhook dispatcher stopped")
    }

    private func deliver(_ delivery: WebhookStore.Due) async {
        let body = Array(delivery.body.utf8)
        var status: Int?
        let outcome: WebhookRetryPolicy.Outcome
        switch await Self.offThePool({ [settings] in NetworkAddressPolicy.verdict(for: delivery.url, allowInternal: settings.allowInternalAddresses, resolve: settings.resolve) }) {
        case .refused(let why):
            outcome = .failed("not sent: \(why)")
        case .connect(let host, let address):
            var request = HTTPClientRequest(url: delivery.url)
            request.method = .POST
            request.body = .bytes(body)
            request.headers.add(name: "Content-Type", value: "application/json")
            request.headers.add(name: "User-Agent", value: "Storecast-Webhooks/1")
            let timestamp = Int64(Date().timeIntervalSince1970)
            for (name, value) in WebhookSignature.headers(id: delivery.messageID, timestamp: timestamp, body: body, secrets: delivery.secrets) {
                request.headers.add(name: name, value: value)
            }
            switch await Self.post(request, to: address, askingFor: host) {
            case .success(let answer):
                status = answer.status
                outcome = .answered(status: answer.status, retryAfter: answer.retryAfter)
            case .failure(let error):
                outcome = .failed("no answer: \(error)")
            }
        }
        let decision = WebhookRetryPolicy(scale: settings.retryScale).decide(attempt: delivery.attempts + 1, outcome: outcome, jitter: .random(in: 0...1))
        var problem: String?
        if case .failed(let why) = outcome { problem = why } else if case .answered(let s, _) = outcome, !(200..<300).contains(s) { problem = "answered \(s)" }
        let metadata: Logger.Metadata = ["endpoint": "\(delivery.endpointID)", "message": "\(delivery.messageID)", "attempt": "\(delivery.attempts + 1)", "status": "\(status.map(String.init) ?? "-")"]
        switch decision {
        case .delivered:
            outcomes.delivered.increment()
            logger.debug("webhook delivered", metadata: metadata)
        case .retry(let after):
            outcomes.retried.increment()
            logger.info("webhook not delivered; trying again", metadata: metadata.merging(["in": "\(after)", "problem": "\(problem ?? "-")"]) { $1 })
        case .failed(let reason):
            outcomes.failed.increment()
            logger.warning("webhook delivery failed for good; it can be replayed through the API", metadata: metadata.merging(["reason": "\(reason)"]) { $1 })
        case .disableEndpoint(let reason):
            outcomes.disabled.increment()
            logger.warning("webhook endpoint disabled", metadata: metadata.merging(["reason": "\(reason)"]) { $1 })
        }
        do {
            let (answered, error) = (status, problem)
            try await database.run { try WebhookStore.record($0, delivery: delivery, decision: decision, status: answered, error: error) }
        } catch {
            // Held for 20 s, then taken again: sent twice at worst, with the same webhook-id.
            logger.warning("could not record a webhook attempt; it will be sent again", metadata: metadata.merging(["error": "\(error)"]) { $1 })
        }
    }

    /// Runs a blocking call (DNS) on a Dispatch thread, not on Swift's cooperative pool.
    static func offThePool<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: body()) }
        }
    }

    /// The status and `Retry-After` of one POST, sent to `address` for `host` (the Host field and
    /// the TLS name stay the URL's), within ``WebhookRetryPolicy/timeout``, following no redirect.
    /// At most 64 KiB of the answer's body is read, and only until the deadline: a receiver can
    /// neither fill the API's memory nor hold a delivery past it.
    static func post(_ request: HTTPClientRequest, to address: String, askingFor host: String) async -> Result<(status: Int, retryAfter: Duration?), any Error> {
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        configuration.dnsOverride = [host: address]
        let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        let result: Result<(status: Int, retryAfter: Duration?), any Error>
        do {
            let deadline = NIODeadline.now() + .seconds(WebhookRetryPolicy.timeout.components.seconds)
            let response = try await client.execute(request, deadline: deadline)
            let retryAfter = response.headers.first(name: "Retry-After").flatMap { WebhookRetryPolicy.retryAfter($0, now: Date()) }
            result = .success((Int(response.status.code), retryAfter))
            _ = try? await response.body.collect(upTo: 64 * 1024)
        } catch {
            result = .failure(error)
        }
        try? await client.shutdown()
        return result
    }
}
