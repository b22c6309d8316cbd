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

    struct SecretRotation: Decodable { var graceSeconds: Int? }
    struct RotatedKey: Encodable {
        var tenant: String; var stream: String
        /// Shown once.
        var streamKey: String
        var publishURL: String
        /// Until when the previous key still publishes (absent: it stopped at once).
        var previousKeyValidUntil: String?
    }
    struct CreateStream: Decodable { var slug: String; var title: String?; var visibility: String? }
    struct SaveProfile: Decodable {
        var name: String
        var rungs: [LadderProfileStore.RungJSON]
        var preset: String?
        var gopSeconds: Int?
        var lowLatency: Bool?
        /// Make it the tenant's default for streams without their own.
        var `default`: Bool?
    }
    struct SavedProfile: Encodable {
        var tenant: String; var name: String; var rungs: [LadderProfileStore.RungJSON]
        var preset: String; var gopSeconds: Int; var lowLatency: Bool; var `default`: Bool
    }
    struct StreamProfile: Decodable { var name: String? }
    struct CreatedStreamResponse: Encodable {
        var id: Int64; var tenant: String; var slug: String
        /// Shown once.
        var streamKey: String
        var publishURL: String
        var playbackURL: String
        /// The feed's preview still, refreshed every few seconds while live.
        var thumbnailURL: String
    }

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
        let book = RouteBook(v1, open: open, documented: router.group().add(middleware: authenticator))
        book.on(.get, "streams", .operator) { request, _ -> Response in
            let tenant = request.uri.queryParameters.get("tenant")
            let streams = try await guarded { try await catalog.listStreams(tenantSlug: tenant) }
            return try json(["streams": streams])
        }
        // Which transcoder worker holds each stream (current leases, or history with current=false).
        book.on(.get, "leases", .operator) { request, _ -> Response in
            let current: Bool
            switch request.uri.queryParameters.get("current") ?? "true" {
            case "true": current = true
            case "false": current = false
            case let other: throw APIError.badRequest("current must be true or false, not \(other)")
            }
            guard let limit = Int(request.uri.queryParameters.get("limit") ?? "200"), (1...1000).contains(limit) else {
                throw APIError.badRequest("limit must be a whole number from 1 to 1000")
            }
            let leases = try await guarded { try await LeaseLedger.list(in: catalog.database, currentOnly: current, limit: limit) }
            return try json(["leases": leases])
        }
        // Ladder profiles: how a tenant's streams are transcoded.
        let profiles = LadderProfileStore(database: catalog.database)
        book.on(.post, "tenants/:tenant/ladder-profiles", .tenant(.streamsWrite)) { request, context -> Response in
            let tenant = try context.parameters.require("tenant")
            let body = try await decode(SaveProfile.self, request, context)
            let profile = try await problems {
                try LadderProfileStore.validated(name: body.name, rungs: body.rungs, preset: body.preset ?? "veryfast",
                                                 gopSeconds: body.gopSeconds ?? 2, lowLatency: body.lowLatency ?? true)
            }
            try await problems { try await guarded { try await profiles.save(tenantSlug: tenant, profile: profile, makeDefault: body.default ?? false) } }
            return try json(SavedProfile(
                tenant: tenant, name: profile.name, rungs: profile.rungs.map(LadderProfileStore.RungJSON.init),
                preset: profile.preset, gopSeconds: Int(profile.gopSeconds), lowLatency: profile.lowLatency, default: body.default ?? false), status: .created)
        }
        book.on(.put, "tenants/:tenant/streams/:stream/ladder-profile", .tenant(.streamsWrite)) { request, context -> Response in
            let tenant = try context.parameters.require("tenant"), stream = try context.parameters.require("stream")
            let body = try await decode(StreamProfile.self, request, context)
            try await problems { try await guarded { try await profiles.assign(tenantSlug: tenant, streamSlug: stream, profileName: body.name) } }
            return try json(["tenant": tenant, "stream": stream, "ladderProfile": body.name ?? "tenant default"])
        }
        // A new stream key, shown once; the old one publishes on for the grace period (0 by default).
        book.on(.post, "tenants/:tenant/streams/:stream/rotate-key", .tenant(.streamsWrite)) { request, context -> Response in
            let tenant = try context.parameters.require("tenant"), stream = try context.parameters.require("stream")
            let body = try await decode(SecretRotation.self, request, context)
            let grace = body.graceSeconds ?? 0
            guard (0...604_800).contains(grace) else { throw APIError.badRequest("graceSeconds must be from 0 to 604800", field: "graceSeconds") }
            guard let rotated = try await guarded({ try await catalog.rotateKey(tenantSlug: tenant, streamSlug: stream, graceSeconds: grace) }) else {
                throw APIError.notFound("no stream \(tenant)/\(stream)")
            }
            logger.info("stream key rotated", metadata: ["tenant": "\(tenant)", "stream": "\(stream)", "grace_seconds": "\(grace)"])
            return try json(RotatedKey(tenant: tenant, stream: stream, streamKey: rotated.key, publishURL: "\(rtmpBaseURL)/live/\(rotated.key)",
                                       previousKeyValidUntil: rotated.previousValidUntil))
        }
        book.on(.post, "tenants/:tenant/streams", .tenant(.streamsWrite)) { request, context -> Response in
            let tenant = try context.parameters.require("tenant")
            let body = try await decode(CreateStream.self, request, context)
            guard Slug.isValid(body.slug) else { throw APIError.badRequest("slug must be \(Slug.rule)") }
            if let v = body.visibility, !PlaybackAccessStore.visibilities.contains(v) {
                throw APIError.badRequest("visibility must be public or private, not \(v)")
            }
            let created: CreatedStream
            do {
                created = try await catalog.createStream(tenantSlug: tenant, slug: body.slug, title: body.title ?? "", visibility: body.visibility ?? "public")
            } catch let error as PostgresError where error.code == .uniqueViolation {
                throw APIError.conflict("tenant \(tenant) already has a stream \(body.slug)")
            } catch let error as PostgresError where error.code == .queryFailed && error.sqlState == nil {
                throw APIError.notFound(error.message)
            } catch is PostgresError {
                throw APIError.unavailable
            }
            return try json(CreatedStreamResponse(
                id: created.streamID, tenant: tenant, slug: created.streamSlug, streamKey: created.streamKey,
                publishURL: "\(rtmpBaseURL)/live/\(created.streamKey)", playbackURL: "\(playbackBaseURL)/live/\(tenant)/\(created.streamSlug)/master.m3u8",
                thumbnailURL: "\(playbackBaseURL)/live/\(tenant)/\(created.streamSlug)/thumbnail.jpg"),
                status: .created)
        }
        let handlers = ControlAPIHandlers(catalog: catalog, webhooks: webhooks, playbackBaseURL: playbackBaseURL)
        do {
            try handlers.registerHandlers(on: DocumentedOperations(book: book), configuration: DocumentedOperations.configuration)
        } catch {
            preconditionFailure("the control API cannot start: \(error)")  // the document lacks an operation's access (tests catch it first)
        }
        streamRoutes(book, catalog: catalog)
        webhookRoutes(book, catalog: catalog)
        handlers.thumbnailRoute(book)
        eventRoutes(book, catalog: catalog, feed: feed)
        highlightRoutes(book, catalog: catalog)
        feedRoutes(book, catalog: catalog, playbackBaseURL: playbackBaseURL)
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

    /// The body as `T`; `limit` caps it below the API's `maximumBodyBytes` (413 over it).
    static func decode<T: Decodable>(_ type: T.Type, _ request: Request, _ context: APIRequestContext, limit: Int = maximumBodyBytes) async throws -> T {
        let buffer: ByteBuffer
        do { buffer = try await request.body.collect(upTo: min(limit, maximumBodyBytes)) } catch {
            throw APIError(status: .contentTooLarge, code: "body_too_large", message: "Request bodies are limited to \(min(limit, maximumBodyBytes)) bytes here.")
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
