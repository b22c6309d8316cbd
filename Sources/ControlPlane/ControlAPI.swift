import Foundation
import HTTPTypes
import Hummingbird
import Logging
import PostgresClient
import StorecastRuntime
import StorecastWire

/// The operator's control API (JSON over HTTP): tenants and streams.
public enum ControlAPI {
    /// Where database refusals go (their text stays out of answers).
    static let logger = Logger(label: "storecast.api")
    /// Largest request body accepted.
    public static let maximumBodyBytes = 64 * 1024

    /// `trustedProxies`: addresses of proxies in front of the API whose `X-Forwarded-For` names
    /// the client (wrong tokens are limited per client address). Every GET also answers HEAD.
    public static func router(catalog: StreamCatalog, adminToken: String, rtmpBaseURL: String, playbackBaseURL: String, trustedProxies: Set<String> = [],
                              webhooks: WebhookDispatcher.Settings = .init(), feed: StreamEventFeed) -> Router<APIRequestContext> {
        build(catalog: catalog, adminToken: adminToken, rtmpBaseURL: rtmpBaseURL, playbackBaseURL: playbackBaseURL, trustedProxies: trustedProxies, webhooks: webhooks, feed: feed).router
    }

    /// Every /v1 route with who may call it (``RouteAccess``), as registered.
    public static func routes() -> [APIRoute] {
        let database = PostgresExecutor(conninfo: "", name: "routes")
        defer { database.shutdown() }
        return build(catalog: StreamCatalog(database: database), adminToken: "", rtmpBaseURL: "", playbackBaseURL: "",
                     feed: StreamEventFeed(database: database, logger: logger)).routes
    }

    static func build(catalog: StreamCatalog, adminToken: String, rtmpBaseURL: String, playbackBaseURL: String, trustedProxies: Set<String> = [],
                      webhooks: WebhookDispatcher.Settings = .init(), feed: StreamEventFeed) -> (router: Router<APIRequestContext>, routes: [APIRoute]) {
        // Every GET answers HEAD (RFC 9110 9.3.2): Hummingbird's own HEAD endpoint runs the GET's
        // whole chain (authentication, scopes, tenant isolation) and drops the body. Before, every
        // HEAD got 404 (an uptime check on /healthz, a client asking a document's size).
        let router = Router(context: APIRequestContext.self, options: .autoGenerateHeadEndpoints)
        router.add(middleware: APIErrorMiddleware(logger: logger))
        router.get("/healthz") { _, _ in "ok" }
        OpenAPIDocument.addRoutes(to: router)
        let authenticator = APIAuthenticator(adminToken: adminToken, database: catalog.database, failures: .init(), trustedProxies: trustedProxies, logger: logger)
        let book = RouteBook(open: router.group("v1"), documented: router.group().add(middleware: authenticator), documentedOpen: router.group())
        let handlers = ControlAPIHandlers(catalog: catalog, webhooks: webhooks, playbackBaseURL: playbackBaseURL, rtmpBaseURL: rtmpBaseURL)
        do {
            try handlers.registerHandlers(on: DocumentedOperations(book: book), configuration: DocumentedOperations.configuration, middlewares: [PlainHeaderValues()])
        } catch {
            preconditionFailure("the control API cannot start: \(error)")  // the document lacks an operation's access (tests catch it first)
        }
        // The one operation still hand-written: a stream's events, Server-Sent Events or a WebSocket.
        eventRoutes(book, catalog: catalog, feed: feed)
        return (router, book.routes)
    }

    /// Maps the profile store's problems to 400 and 404.
    static func problems<T>(_ body: () async throws -> T) async throws -> T {
        do { return try await body() } catch let problem as LadderProfileStore.Problem {
            switch problem {
            case .invalid(let message): throw APIError.badRequest(message)
            case .notFound(let message): throw APIError.notFound(message)
            }
        }
    }

    static func guarded<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        do { return try await body() } catch let error as PostgresError where error.code == .connectionFailed {
            throw APIError.unavailable
        } catch let error as PostgresError where error.code == .uniqueViolation {
            throw error  // the route says what already exists (409)
        } catch let error as PostgresError {
            // The server's text may quote the row (secrets included): it stays in the log.
            logger.warning("a request failed in the database", metadata: ["error": "\(error)"])
            throw APIError.badRequest("The request was refused by a database constraint\(error.sqlState.map { " (SQLSTATE \($0))" } ?? ""); check the values sent.")
        }
    }
}
