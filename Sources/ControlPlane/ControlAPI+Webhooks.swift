import Foundation
import Hummingbird
import OpenAPIRuntime
import StorecastRuntime

/// A tenant's webhook endpoints and their delivery log (issue 16; scope `webhooks`), served
/// from the document's generated types; the delivery log's page stays hand-written below until
/// the generator writes a required `next` of null (apple/swift-openapi-generator#934).
extension ControlAPIHandlers {
    func createWebhook(_ input: Operations.CreateWebhook.Input) async throws -> Operations.CreateWebhook.Output {
        let tenant = input.path.tenant
        let body: Operations.CreateWebhook.Input.Body.JsonPayload
        switch input.body { case .json(let json): body = json }
        let types = try ControlAPI.validEventTypes((body.eventTypes ?? []).map(\.rawValue))
        guard (body.description ?? "").count <= 200 else { throw APIError.badRequest("description is at most 200 characters", field: "description") }
        guard body.url.utf8.count <= 2048 else { throw APIError.badRequest("url is at most 2048 bytes", field: "url") }
        try await ControlAPI.requireTenant(tenant, catalog)
        if let refusal = await WebhookDispatcher.offThePool({ NetworkAddressPolicy.refusal(of: body.url, allowInternal: webhooks.allowInternalAddresses) }) {
            throw APIError.badRequest("This URL cannot receive webhooks: \(refusal).", field: "url")
        }
        let secret = WebhookSignature.newSecret()
        let endpoint: WebhookStore.Endpoint
        switch try await ControlAPI.guarded({ try await catalog.database.run {
            try WebhookStore.create($0, tenant: tenant, url: body.url, description: body.description ?? "", eventTypes: types, secret: secret)
        } }) {
        case .created(let made): endpoint = made
        case .noSuchTenant: throw APIError.notFound(AccessPolicy.notFoundMessage(tenant))
        case .tooMany: throw APIError.conflict("A tenant has at most \(WebhookStore.maximumEndpointsPerTenant) webhook endpoints; delete one first.")
        }
        ControlAPI.logger.info("webhook endpoint added", metadata: ["tenant": "\(tenant)", "endpoint": "\(endpoint.id)", "events": "\(types.isEmpty ? ["all"] : types)"])
        return .created(.init(body: .json(.init(secret: secret, webhook: try .init(endpoint)))))
    }

    func listWebhooks(_ input: Operations.ListWebhooks.Input) async throws -> Operations.ListWebhooks.Output {
        let tenant = input.path.tenant
        try await ControlAPI.requireTenant(tenant, catalog)
        let endpoints = try await ControlAPI.guarded { try await catalog.database.run { try WebhookStore.list($0, tenant: tenant) } }
        return .ok(.init(body: .json(.init(webhooks: try endpoints.map(Components.Schemas.WebhookEndpoint.init)))))
    }

    func getWebhook(_ input: Operations.GetWebhook.Input) async throws -> Operations.GetWebhook.Output {
        .ok(.init(body: .json(try .init(try await ControlAPI.endpoint(input.path.tenant, input.path.endpoint, catalog)))))
    }

    func deleteWebhook(_ input: Operations.DeleteWebhook.Input) async throws -> Operations.DeleteWebhook.Output {
        let (tenant, id) = (input.path.tenant, input.path.endpoint)
        guard try await ControlAPI.guarded({ try await catalog.database.run { try WebhookStore.delete($0, tenant: tenant, id: id) } }) else {
            throw APIError.notFound("no webhook endpoint \(id) of tenant \(tenant)")
        }
        return .noContent(.init())
    }

    /// A new secret; the old one keeps signing during the grace period (both signatures are sent).
    func rotateWebhookSecret(_ input: Operations.RotateWebhookSecret.Input) async throws -> Operations.RotateWebhookSecret.Output {
        let (tenant, id) = (input.path.tenant, input.path.endpoint)
        let body: Operations.RotateWebhookSecret.Input.Body.JsonPayload
        switch input.body { case .json(let json): body = json }
        let grace = body.graceSeconds ?? 86_400
        guard (0...604_800).contains(grace) else { throw APIError.badRequest("graceSeconds must be from 0 to 604800", field: "graceSeconds") }
        let secret = WebhookSignature.newSecret()
        guard try await ControlAPI.guarded({ try await catalog.database.run { try WebhookStore.rotateSecret($0, tenant: tenant, id: id, secret: secret, graceSeconds: grace) } }) else {
            throw APIError.notFound("no webhook endpoint \(id) of tenant \(tenant)")
        }
        return .ok(.init(body: .json(.init(secret: secret, webhook: try .init(try await ControlAPI.endpoint(tenant, id, catalog))))))
    }

    /// After a 410 turned it off: on again.
    func enableWebhook(_ input: Operations.EnableWebhook.Input) async throws -> Operations.EnableWebhook.Output {
        let (tenant, id) = (input.path.tenant, input.path.endpoint)
        guard try await ControlAPI.guarded({ try await catalog.database.run { try WebhookStore.enable($0, tenant: tenant, id: id) } }) else {
            throw APIError.notFound("no webhook endpoint \(id) of tenant \(tenant)")
        }
        return .ok(.init(body: .json(try .init(try await ControlAPI.endpoint(tenant, id, catalog)))))
    }

    func replayDelivery(_ input: Operations.ReplayDelivery.Input) async throws -> Operations.ReplayDelivery.Output {
        let (tenant, id) = (input.path.tenant, input.path.endpoint)
        guard let delivery = Int64(input.path.delivery),
              let replayed = try await ControlAPI.guarded({ try await catalog.database.run { try WebhookStore.replay($0, tenant: tenant, endpoint: id, delivery: delivery) } }) else {
            throw APIError.notFound("no such delivery of webhook endpoint \(id), or it is being sent right now")
        }
        return .accepted(.init(body: .json(try .init(replayed))))
    }
}

extension ControlAPIHandlers {
    /// The endpoint's delivery log, newest first, a page at a time.
    func listDeliveries(_ input: Operations.ListDeliveries.Input) async throws -> Operations.ListDeliveries.Output {
        let (tenant, id) = (input.path.tenant, input.path.endpoint)
        let (limit, cursor) = try ControlAPI.page(limit: input.query.limit, cursor: input.query.cursor)
        guard let rows = try await ControlAPI.guarded({
            try await catalog.database.run { try WebhookStore.deliveries($0, tenant: tenant, endpoint: id, before: cursor ?? Int64.max, limit: limit) }
        }) else {
            throw APIError.notFound("no webhook endpoint \(id) of tenant \(tenant)")
        }
        return .ok(.init(body: .json(.init(items: try rows.map(Components.Schemas.Delivery.init), limit: limit) { Int64($0.id) })))
    }
}

extension ControlAPI {
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

extension Components.Schemas.WebhookEndpoint {
    /// A stored endpoint as the document shows it.
    init(_ endpoint: WebhookStore.Endpoint) throws {
        self.init(id: endpoint.id, tenant: endpoint.tenant, url: endpoint.url, description: endpoint.description,
                  eventTypes: endpoint.eventTypes.compactMap(Components.Schemas.EventType.init(rawValue:)),
                  disabledAt: try endpoint.disabledAt.map(MillisecondDates.date), disabledReason: endpoint.disabledReason,
                  previousSecretValidUntil: try endpoint.previousSecretValidUntil.map(MillisecondDates.date), createdAt: try MillisecondDates.date(endpoint.createdAt))
    }
}

extension Components.Schemas.Delivery {
    /// A delivery as the document shows it.
    init(_ delivery: WebhookStore.Delivery) throws {
        guard let type = Components.Schemas.EventType(rawValue: delivery.type), let state = StatePayload(rawValue: delivery.state) else {
            throw APIError(status: .internalServerError, code: "internal", message: "A stored delivery has a type or state the document does not name.")
        }
        self.init(id: Int(delivery.id), endpointId: delivery.endpointId, eventId: Int(delivery.eventId), messageId: delivery.messageId, _type: type,
                  state: state, attempts: delivery.attempts, nextAttemptAt: try delivery.nextAttemptAt.map(MillisecondDates.date),
                  lastAttemptAt: try delivery.lastAttemptAt.map(MillisecondDates.date), lastStatus: delivery.lastStatus, lastError: delivery.lastError,
                  deliveredAt: try delivery.deliveredAt.map(MillisecondDates.date), createdAt: try MillisecondDates.date(delivery.createdAt))
    }
}
