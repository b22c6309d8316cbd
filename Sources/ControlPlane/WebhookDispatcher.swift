import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Logging
import Metrics
import PostgresClient
import ServiceLifecycle
import StorecastRuntime
import Synchronization

/// Sends tenants' webhook events (issue 16), in the API process: takes due deliveries from
/// PostgreSQL (held 60 s each, up to two per endpoint, and none of an endpoint with one in
/// flight, so any number of API processes share the work, one slow receiver does not take every
/// slot, and a killed one's deliveries are taken again), sends each endpoint's one at a time in
/// the order the events happened (a retry waits on its schedule; later events do not wait for
/// it), posts each with Standard Webhooks' headers and a 15 s deadline,
/// follows no redirect, refuses internal addresses (``NetworkAddressPolicy``) unless the operator
/// allows them, and records what ``WebhookRetryPolicy`` decides. On SIGTERM it stops taking work
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

    private let configuration: URLSessionConfiguration = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = Double(WebhookRetryPolicy.timeout.components.seconds)
        configuration.timeoutIntervalForResource = Double(WebhookRetryPolicy.timeout.components.seconds)
        return configuration
    }()

    public func run() async throws {
        let hold = max(20, settings.holdSeconds)
        var warned = false
        var nextPrune = ContinuousClock.now + .seconds(60)
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
                try? await Task.sleep(for: .milliseconds(500))
                continue
            }
            // Endpoints side by side; each endpoint's deliveries in turn (`claim` sorts them so).
            await withTaskGroup(of: Void.self) { group in
                for (_, turns) in Dictionary(grouping: due, by: \.endpointID) {
                    group.addTask { for delivery in turns { await self.deliver(delivery) } }
                }
            }
        }
        logger.info("webhook dispatcher stopped")
    }

    private func deliver(_ delivery: WebhookStore.Due) async {
        let body = Array(delivery.body.utf8)
        var status: Int?
        let outcome: WebhookRetryPolicy.Outcome
        if let refusal = await Self.offThePool({ [settings] in NetworkAddressPolicy.refusal(of: delivery.url, allowInternal: settings.allowInternalAddresses) }) {
            outcome = .failed("not sent: \(refusal)")
        } else {
            var request = URLRequest(url: URL(string: delivery.url)!)
            request.httpMethod = "POST"
            request.httpBody = Data(body)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.setValue("Storecast-Webhooks/1", forHTTPHeaderField: "User-Agent")
            let timestamp = Int64(Date().timeIntervalSince1970)
            for (name, value) in WebhookSignature.headers(id: delivery.messageID, timestamp: timestamp, body: body, secrets: delivery.secrets) {
                request.setValue(value, forHTTPHeaderField: name)
            }
            switch await ResponseHead.fetch(request, configuration: configuration) {
            case .success(let http):
                status = http.statusCode
                let retryAfter = http.value(forHTTPHeaderField: "Retry-After").flatMap(Int.init).map { Duration.seconds(max(0, $0)) }
                outcome = .answered(status: http.statusCode, retryAfter: retryAfter)
            case .failure(let error):
                outcome = .failed("no answer: \(error.localizedDescription)")
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

    /// One POST whose answer is read as far as its status and headers: the body is never
    /// downloaded (a receiver cannot fill the API's memory), and a redirect is not followed.
    final class ResponseHead: NSObject, URLSessionDataDelegate, @unchecked Sendable {
        private let done: Mutex<CheckedContinuation<Result<HTTPURLResponse, any Error>, Never>?>
        private let head = Mutex<HTTPURLResponse?>(nil)

        private init(_ continuation: CheckedContinuation<Result<HTTPURLResponse, any Error>, Never>) {
            done = Mutex(continuation)
        }

        static func fetch(_ request: URLRequest, configuration: URLSessionConfiguration) async -> Result<HTTPURLResponse, any Error> {
            await withCheckedContinuation { continuation in
                let delegate = ResponseHead(continuation)
                let session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
                session.dataTask(with: request).resume()
                session.finishTasksAndInvalidate()
            }
        }

        private func finish(_ result: Result<HTTPURLResponse, any Error>) {
            done.withLock { c in c?.resume(returning: result); c = nil }
        }

        func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse, completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
            if let http = response as? HTTPURLResponse {
                head.withLock { $0 = http }
                finish(.success(http))
            }
            completionHandler(.cancel)
        }

        func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse, newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void) {
            completionHandler(nil)
        }

        func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
            if let http = head.withLock({ $0 }) { finish(.success(http)) } else if let error { finish(.failure(error)) } else if let http = task.response as? HTTPURLResponse { finish(.success(http)) } else {
                finish(.failure(URLError(.badServerResponse)))
            }
        }
    }
}
