import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Metrics
import PostgresClient
import StorecastRuntime
import Synchronization

/// Checks every /v1 request's bearer token and records who is calling in the context: the
/// operator's admin token (compared in constant time) or a tenant's API key (its row by id,
/// its secret against the stored hash in constant time; revoked keys and suspended tenants'
/// keys fail). Wrong tokens are limited per client address (``KeyFailureBackoff``: after 5 in a
/// minute, a wait that doubles from 1 s to 60 s, answered 429 with `Retry-After` and no
/// database query) and per key id (``KeyIDThrottle``: past the same budget, wrong secrets for
/// that id are refused 429 from memory, whatever address sends them, while its right secret
/// still works: key ids are not secret, so a limit that refused the key itself would let
/// anyone lock a tenant out). Every refusal is logged and counted.
struct APIAuthenticator: RouterMiddleware {
    typealias Context = APIRequestContext
    let adminToken: String
    let database: PostgresExecutor
    let failures: FailureLedger
    /// Proxies in front of the API whose `X-Forwarded-For` names the client (``ClientAddress``):
    /// without them every client behind a proxy would share one limit.
    let trustedProxies: Set<String>
    let logger: Logger

    /// The wrong-token ledgers, shared by every request: by client address and by key id.
    final class FailureLedger: Sendable {
        private let addresses = Mutex(KeyFailureBackoff())
        private let keys = Mutex(KeyIDThrottle())
        private let failed = Counter(label: "storecast_api_authentication_failures_total")
        private let refusedByKey = Counter(label: "storecast_api_key_guesses_refused_total")
        init() {}

        func wait(address: String, now: ContinuousClock.Instant) -> Duration? {
            addresses.withLock { $0.wait(address, now: now) }
        }

        func decide(_ key: APIKey, now: ContinuousClock.Instant) -> KeyIDThrottle.Decision {
            keys.withLock { $0.decide(key.id, secretHash: key.secretHash, now: now) }
        }

        func remember(_ id: String, storedHash: String?, now: ContinuousClock.Instant) {
            keys.withLock { $0.remember(id, storedHash: storedHash, now: now) }
        }

        /// A wrong token from `address` (for key `id`, when it named one); the address's wait.
        func failed(address: String, keyID id: String?, refused: Bool, now: ContinuousClock.Instant) -> Duration? {
            failed.increment()
            if refused { refusedByKey.increment() }
            if let id { keys.withLock { _ = $0.failed(id, now: now) } }
            return addresses.withLock { $0.failed(address, now: now) }
        }
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let header = request.headers[.authorization] ?? ""
        let token = header.hasPrefix("Bearer ") ? String(header.dropFirst(7)) : ""
        let address = ClientAddress.resolve(peer: context.remoteAddress?.ipAddress, forwardedFor: request.headers[HTTPField.Name("X-Forwarded-For")!], trustedProxies: trustedProxies) ?? "unknown"
        let key = APIKey.parse(token)
        let now = ContinuousClock.now
        if let wait = failures.wait(address: address, now: now) {
            throw APIError.tooManyFailures(wait: Int(wait.components.seconds) + 1)
        }
        var context = context
        if ConstantTime.equal(token, adminToken) {
            context.principal = .operator
        } else if let key, case .refuse(let wait) = try await keyDecision(key, now: now) {
            let penalty = failures.failed(address: address, keyID: key.id, refused: true, now: now)
            logger.warning("API request refused: a wrong secret for a key id over its budget, not looked up (the key itself still works)", metadata: [
                "remote": "\(address)", "key_id": "\(key.id)", "path": "\(request.uri.path)", "next_wait": "\(penalty.map { "\($0)" } ?? "none")"])
            throw APIError.tooManyKeyFailures(keyID: key.id, wait: Int(wait.components.seconds) + 1)
        } else if let key, let holder = try await ControlAPI.guarded({ try await database.run { try APIKeyStore.authenticate($0, key) } }) {
            context.principal = .tenant(holder.tenant, keyID: holder.keyID, scopes: Set(holder.scopes.compactMap(APIScope.init(rawValue:))))
        } else {
            let penalty = failures.failed(address: address, keyID: key?.id, refused: false, now: now)
            logger.warning("API request refused: wrong token", metadata: [
                "remote": "\(address)", "key_id": "\(key?.id ?? "-")", "path": "\(request.uri.path)", "next_wait": "\(penalty.map { "\($0)" } ?? "none")"])
            throw APIError.unauthorized
        }
        return try await next(request, context)
    }

    /// The key id's throttle decision, reading the key's stored hash first when it asks.
    private func keyDecision(_ key: APIKey, now: ContinuousClock.Instant) async throws -> KeyIDThrottle.Decision {
        let decision = failures.decide(key, now: now)
        guard decision == .refresh else { return decision }
        let stored = try await ControlAPI.guarded { try await database.run { try APIKeyStore.storedHash($0, id: key.id) } }
        failures.remember(key.id, storedHash: stored, now: now)
        return failures.decide(key, now: now)
    }
}
