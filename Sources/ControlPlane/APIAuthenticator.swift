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
/// database query), logged and counted. Wrong secrets for one key id are counted too, and an
/// id under attack is logged, but its right secret is never refused: key ids are not secret, so
/// a limit on them would let anyone lock a tenant's key out (a secret has about 206 bits).
struct APIAuthenticator: RouterMiddleware {
    typealias Context = APIRequestContext
    let adminToken: String
    let database: PostgresExecutor
    let failures: FailureLedger
    /// Proxies in front of the API whose `X-Forwarded-For` names the client (``ClientAddress``):
    /// without them every client behind a proxy would share one limit.
    let trustedProxies: Set<String>
    let logger: Logger

    /// The wrong-token ledger, shared by every request.
    final class FailureLedger: Sendable {
        private let backoff = Mutex(KeyFailureBackoff())
        private let failed = Counter(label: "storecast_api_authentication_failures_total")
        init() {}

        func wait(_ keys: [String], now: ContinuousClock.Instant) -> Duration? {
            backoff.withLock { b in keys.compactMap { b.wait($0, now: now) }.max() }
        }

        func failed(_ keys: [String], now: ContinuousClock.Instant) -> Duration? {
            failed.increment()
            return backoff.withLock { b in keys.compactMap { b.failed($0, now: now) }.max() }
        }
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let header = request.headers[.authorization] ?? ""
        let token = header.hasPrefix("Bearer ") ? String(header.dropFirst(7)) : ""
        let address = ClientAddress.resolve(peer: context.remoteAddress?.ipAddress, forwardedFor: request.headers[HTTPField.Name("X-Forwarded-For")!], trustedProxies: trustedProxies) ?? "unknown"
        let key = APIKey.parse(token)
        let ledgerKeys = ["address \(address)"] + (key.map { ["key \($0.id)"] } ?? [])
        let now = ContinuousClock.now
        if let wait = failures.wait(["address \(address)"], now: now) {
            throw APIError.tooManyFailures(wait: Int(wait.components.seconds) + 1)
        }
        var context = context
        if ConstantTime.equal(token, adminToken) {
            context.principal = .operator
        } else if let key, let holder = try await ControlAPI.guarded({ try await database.run { try APIKeyStore.authenticate($0, key) } }) {
            context.principal = .tenant(holder.tenant, keyID: holder.keyID, scopes: Set(holder.scopes.compactMap(APIScope.init(rawValue:))))
        } else {
            let penalty = failures.failed(ledgerKeys, now: now)
            if let key, failures.wait(["key \(key.id)"], now: now) != nil {
                logger.warning("many wrong secrets for one API key id; the key itself still works", metadata: ["key_id": "\(key.id)", "remote": "\(address)"])
            }
            logger.warning("API request refused: wrong token", metadata: [
                "remote": "\(address)", "key_id": "\(key?.id ?? "-")", "path": "\(request.uri.path)", "next_wait": "\(penalty.map { "\($0)" } ?? "none")"])
            throw APIError.unauthorized
        }
        return try await next(request, context)
    }
}
