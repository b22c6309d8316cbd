import Foundation
import Hummingbird
import StorecastRuntime

extension ControlAPI {
    struct CreateAPIKey: Decodable { var name: String?; var scopes: [String] }
    struct CreatedAPIKey: Encodable {
        /// The whole key, shown once: only its hash is kept.
        var key: String
        var apiKey: APIKeyStore.Row
    }

    /// A tenant's API keys (issue 16): made by the operator or by the tenant itself, shown once,
    /// stored hashed, revocable. A key may make or revoke only keys whose scopes it holds all of,
    /// so no key can give itself more than it has.
    static func apiKeyRoutes(_ book: RouteBook, catalog: StreamCatalog) {
        book.on(.post, "tenants/:tenant/api-keys", .tenant(nil)) { request, context -> Response in
            let tenant = try context.parameters.require("tenant")
            let body = try await decode(CreateAPIKey.self, request, context)
            let scopes = try validScopes(body.scopes)
            let name = body.name ?? ""
            guard name.count <= 100 else { throw APIError.badRequest("name is at most 100 characters", field: "name") }
            try requireHolds(scopes, context.principal, making: true)
            let key = APIKey.generate()
            let principal = context.principal ?? .operator
            guard let row = try await guarded({ try await catalog.database.run {
                try APIKeyStore.create($0, tenant: tenant, key: key, name: name, scopes: scopes.map(\.rawValue), createdBy: principal.name)
            } }) else { throw APIError.notFound(AccessPolicy.notFoundMessage(tenant)) }
            logger.info("API key made", metadata: ["tenant": "\(tenant)", "key_id": "\(key.id)", "scopes": "\(row.scopes)", "by": "\(principal.name)"])
            return try json(CreatedAPIKey(key: key.text, apiKey: row), status: .created)
        }
        book.on(.get, "tenants/:tenant/api-keys", .tenant(nil)) { _, context -> Response in
            let tenant = try context.parameters.require("tenant")
            try await requireTenant(tenant, catalog)
            let keys = try await guarded { try await catalog.database.run { try APIKeyStore.list($0, tenant: tenant) } }
            return try json(["apiKeys": keys])
        }
        book.on(.delete, "tenants/:tenant/api-keys/:key", .tenant(nil)) { _, context -> Response in
            let tenant = try context.parameters.require("tenant"), id = try context.parameters.require("key")
            guard let row = try await guarded({ try await catalog.database.run { try APIKeyStore.find($0, tenant: tenant, id: id) } }) else {
                throw APIError.notFound("no API key \(id) of tenant \(tenant)")
            }
            try requireHolds(Set(row.scopes.compactMap(APIScope.init(rawValue:))), context.principal, making: false)
            _ = try await guarded { try await catalog.database.run { try APIKeyStore.revoke($0, tenant: tenant, id: id) } }
            logger.info("API key revoked", metadata: ["tenant": "\(tenant)", "key_id": "\(id)", "by": "\(context.principal?.name ?? "-")"])
            return Response(status: .noContent)
        }
    }

    static func validScopes(_ names: [String]) throws -> Set<APIScope> {
        guard !names.isEmpty else { throw APIError.badRequest("scopes must name at least one scope", field: "scopes") }
        var scopes: Set<APIScope> = []
        for name in names {
            guard let scope = APIScope(rawValue: name) else {
                throw APIError.badRequest("unknown scope \(name); scopes are \(APIScope.allCases.map(\.rawValue).joined(separator: ", "))", field: "scopes")
            }
            scopes.insert(scope)
        }
        return scopes
    }

    /// A tenant's key acts on keys whose scopes it holds all of; the operator on any.
    static func requireHolds(_ scopes: Set<APIScope>, _ principal: Principal?, making: Bool) throws {
        guard case .tenant(_, _, let own)? = principal else { return }
        let missing = scopes.subtracting(own)
        guard missing.isEmpty else {
            throw APIError.forbidden("This API key cannot \(making ? "make" : "revoke") a key with \(missing.map(\.rawValue).sorted().joined(separator: ", ")), which it does not hold itself.")
        }
    }
}
