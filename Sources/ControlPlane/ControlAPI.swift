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

    struct StreamProfile: Decodable { var name: String? }
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
        let open = router.group("v1")
        let v1 = router.group("v1")
        let authenticator = APIAuthenticator(adminToken: adminToken, database: catalog.database, failures: .init(), trustedProxies: trustedProxies, logger: logger)
        v1.add(middleware: authenticator)
        let book = RouteBook(v1, open: open, documented: router.group().add(middleware: authenticator), documentedOpen: router.group())
        // A stream's own ladder profile, or null for the tenant's default (hand-written: the
        // generator leaves the document's oneOf of a slug and null out of the body's type).
        let profiles = LadderProfileStore(database: catalog.database)
        book.on(.put, "tenants/:tenant/streams/:stream/ladder-profile", .tenant(.streamsWrite)) { request, context -> Response in
            let tenant = try context.parameters.require("tenant"), stream = try context.parameters.require("stream")
            let body = try await decode(StreamProfile.self, request, context)
            try await problems { try await guarded { try await profiles.assign(tenantSlug: tenant, streamSlug: stream, profileName: body.name) } }
            return try json(["tenant": tenant, "stream": stream, "ladderProfile": body.name ?? "tenant default"])
        }
        let handlers = ControlAPIHandlers(catalog: catalog, webhooks: webhooks, playbackBaseURL: playbackBaseURL, rtmpBaseURL: rtmpBaseURL)
        do {
            try handlers.registerHandlers(on: DocumentedOperations(book: book), configuration: DocumentedOperations.configuration, middlewares: [PlainHeaderValues()])
        } catch {
            preconditionFailure("the control API cannot start: \(error)")  // the document lacks an operation's access (tests catch it first)
        }
        streamRoutes(book, catalog: catalog)
        webhookRoutes(book, catalog: catalog)
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

    /// The body as `T`, within the API's `maximumBodyBytes` (413 over it).
    static func decode<T: Decodable>(_ type: T.Type, _ request: Request, _ context: APIRequestContext) async throws -> T {
        let buffer: ByteBuffer
        do { buffer = try await request.body.collect(upTo: maximumBodyBytes) } catch {
            throw APIError(status: .contentTooLarge, code: "body_too_large", message: "Request bodies are limited to \(maximumBodyBytes) bytes here.")
        }
        do { return try JSONDecoder().decode(T.self, from: Data(buffer.readableBytesView)) } catch let problem as JSONFieldProblem {
            throw APIError.badRequest(problem.message, field: problem.field)
        } catch {
            throw APIError.badRequest("The body is not the JSON this endpoint expects: \(error)")
        }
    }

    static func json<T: Encodable>(_ value: T, status: HTTPResponse.Status = .ok) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: try encoder.encode(value))))
    }
}
