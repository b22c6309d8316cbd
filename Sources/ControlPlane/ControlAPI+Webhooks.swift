import Foundation
import Hummingbird
import StorecastRuntime

extension ControlAPI {
    struct CreateWebhook: Decodable { var url: String; var description: String?; var eventTypes: [String]? }
    struct WebhookWithSecret: Encodable {
        /// `whsec_…`: verify `webhook-signature` with it (Standard Webhooks).
        var secret: String
        var webhook: WebhookStore.Endpoint
    }

    /// A tenant's webhook endpoints and their delivery log (issue 16; scope `webhooks`).
    static func webhookRoutes(_ book: RouteBook, catalog: StreamCatalog, settings: WebhookDispatcher.Settings) {
        let database = catalog.database
        book.on(.post, "tenants/:tenant/webhooks", .tenant(.webhooks)) { request, context -> Response in
            let tenant = try context.parameters.require("tenant")
            let body = try await decode(CreateWebhook.self, request, context)
            let types = try validEventTypes(body.eventTypes ?? [])
            guard (body.description ?? "").count <= 200 else { throw APIError.badRequest("description is at most 200 characters", field: "description") }
            guard body.url.utf8.count <= 2048 else { throw APIError.badRequest("url is at most 2048 bytes", field: "url") }
            try await requireTenant(tenant, catalog)
            if let refusal = await WebhookDispatcher.offThePool({ NetworkAddressPolicy.refusal(of: body.url, allowInternal: settings.allowInternalAddresses) }) {
                throw APIError.badRequest("This URL cannot receive webhooks: \(refusal).", field: "url")
            }
            let secret = WebhookSignature.newSecret()
            let endpoint: WebhookStore.Endpoint
            switch try await guarded({ try await database.run {
                try WebhookStore.create($0, tenant: tenant, url: body.url, description: body.description ?? "", eventTypes: types, secret: secret)
            } }) {
            case .created(let made): endpoint = made
            case .noSuchTenant: throw APIError.notFound(AccessPolicy.notFoundMessage(tenant))
            case .tooMany: throw APIError.conflict("A tenant has at most \(WebhookStore.maximumEndpointsPerTenant) webhook endpoints; delete one first.")
            }
            logger.info("webhook endpoint added", metadata: ["tenant": "\(tenant)", "endpoint": "\(endpoint.id)", "events": "\(types.isEmpty ? ["all"] : types)"])
            return try json(WebhookWithSecret(secret: secret, webhook: endpoint), status: .created)
        }
        book.on(.get, "tenants/:tenant/webhooks", .tenant(.webhooks)) { _, context -> Response in
            let tenant = try context.parameters.require("tenant")
            try await requireTenant(tenant, catalog)
            return try json(["webhooks": try await guarded { try await database.run { try WebhookStore.list($0, tenant: tenant) } }])
        }
        book.on(.get, "tenants/:tenant/webhooks/:endpoint", .tenant(.webhooks)) { _, context -> Response in
            let (tenant, id) = (try context.parameters.require("tenant"), try context.parameters.require("endpoint"))
            return try json(try await endpoint(tenant, id, catalog))
        }
        book.on(.delete, "tenants/:tenant/webhooks/:endpoint", .tenant(.webhooks)) { _, context -> Response in
            let (tenant, id) = (try context.parameters.require("tenant"), try context.parameters.require("endpoint"))
            guard try await guarded({ try await database.run { try WebhookStore.delete($0, tenant: tenant, id: id) } }) else {
                throw APIError.notFound("no webhook endpoint \(id) of tenant \(tenant)")
            }
            return Response(status: .noContent)
        }
        // A new secret; the old one keeps signing during the grace period (both signatures are sent).
        book.on(.post, "tenants/:tenant/webhooks/:endpoint/rotate-secret", .tenant(.webhooks)) { request, context -> Response in
            let (tenant, id) = (try context.parameters.require("tenant"), try context.parameters.require("endpoint"))
            let body = try await decode(SecretRotation.self, request, context)
            let grace = body.graceSeconds ?? 86_400
            guard (0...604_800).contains(grace) else { throw APIError.badRequest("graceSeconds must be from 0 to 604800", field: "graceSeconds") }
            let secret = WebhookSignature.newSecret()
            guard try await guarded({ try await database.run { try WebhookStore.rotateSecret($0, tenant: tenant, id: id, secret: secret, graceSeconds: grace) } }) else {
                throw APIError.notFound("no webhook endpoint \(id) of tenant \(tenant)")
            }
            return try json(WebhookWithSecret(secret: secret, webhook: try await endpoint(tenant, id, catalog)))
        }
        // After a 410 turned it off: on again.
        book.on(.post, "tenants/:tenant/webhooks/:endpoint/enable", .tenant(.webhooks)) { _, context -> Response in
            let (tenant, id) = (try context.parameters.require("tenant"), try context.parameters.require("endpoint"))
            guard try await guarded({ try await database.run { try WebhookStore.enable($0, tenant: tenant, id: id) } }) else {
                throw APIError.notFound("no webhook endpoint \(id) of tenant \(tenant)")
            }
            return try json(try await endpoint(tenant, id, catalog))
        }
        book.on(.get, "tenants/:tenant/webhooks/:endpoint/deliveries", .tenant(.webhooks)) { request, context -> Response in
            let (tenant, id) = (try context.parameters.require("tenant"), try context.parameters.require("endpoint"))
            let (limit, cursor) = try pageQuery(request)
            guard let rows = try await guarded({ try await database.run { try WebhookStore.deliveries($0, tenant: tenant, endpoint: id, before: cursor ?? Int64.max, limit: limit) } }) else {
                throw APIError.notFound("no webhook endpoint \(id) of tenant \(tenant)")
            }
            return try json(Page(items: rows, next: rows.count == limit ? rows.last.map { "\($0.id)" } : nil, key: "deliveries"))
        }
        book.on(.post, "tenants/:tenant/webhooks/:endpoint/deliveries/:delivery/replay", .tenant(.webhooks)) { _, context -> Response in
            let (tenant, id) = (try context.parameters.require("tenant"), try context.parameters.require("endpoint"))
            guard let delivery = Int64(try context.parameters.require("delivery")),
                  let replayed = try await guarded({ try await database.run { try WebhookStore.replay($0, tenant: tenant, endpoint: id, delivery: delivery) } }) else {
                throw APIError.notFound("no such delivery of webhook endpoint \(id), or it is being sent right now")
            }
            return try json(replayed, status: .accepted)
        }
    }

    static func endpoint(_ tenant: String, _ id: String, _ catalog: StreamCatalog) async throws -> WebhookStore.Endpoint {
        guard let found = try await guarded({ try await catalog.database.run { try WebhookStore.find($0, tenant: tenant, id: id) } }) else {
            throw APIError.notFound("no webhook endpoint \(id) of tenant \(tenant)")
        }
        return found
    }

    static func validEventTypes(_ types: [String]) throws -> [String] {
        guard types.count <= WebhookOutbox.eventTypes.count else { throw APIError.badRequest("too many event types", field: "eventTypes") }
        for type in types where !WebhookOutbox.eventTypes.contains(type) {
            throw APIError.badRequest("unknown event type \(type); the types are \(WebhookOutbox.eventTypes.joined(separator: ", "))", field: "eventTypes")
        }
        return Array(Set(types)).sorted()
    }
}
