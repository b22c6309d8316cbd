import Foundation
import Hummingbird
import OpenAPIRuntime
import StorecastRuntime

/// A tenant's API keys (issue 16): made by the operator or by the tenant itself, shown once,
/// stored hashed, revocable. A key may make or revoke only keys whose scopes it holds all of,
/// so no key can give itself more than it has. Served from the document's generated types.
extension ControlAPIHandlers {
    func createAPIKey(_ input: Operations.CreateAPIKey.Input) async throws -> Operations.CreateAPIKey.Output {
        let tenant = input.path.tenant
        let body: Operations.CreateAPIKey.Input.Body.JsonPayload
        switch input.body { case .json(let json): body = json }
        let scopes = try ControlAPI.validScopes(body.scopes.map(\.rawValue))
        let name = body.name ?? ""
        guard name.count <= 100 else { throw APIError.badRequest("name is at most 100 characters", field: "name") }
        guard let principal = Caller.principal else { throw APIError.unauthorized }
        try ControlAPI.requireHolds(scopes, principal, making: true)
        let key = APIKey.generate()
        guard let row = try await ControlAPI.guarded({ try await catalog.database.run {
            try APIKeyStore.create($0, tenant: tenant, key: key, name: name, scopes: scopes.map(\.rawValue), createdBy: principal.name)
        } }) else { throw APIError.notFound(AccessPolicy.notFoundMessage(tenant)) }
        ControlAPI.logger.info("API key made", metadata: ["tenant": "\(tenant)", "key_id": "\(key.id)", "scopes": "\(row.scopes)", "by": "\(principal.name)"])
        return .created(.init(body: .json(.init(key: key.text, apiKey: try .init(row)))))
    }

    func listAPIKeys(_ input: Operations.ListAPIKeys.Input) async throws -> Operations.ListAPIKeys.Output {
        let tenant = input.path.tenant
        try await ControlAPI.requireTenant(tenant, catalog)
        let keys = try await ControlAPI.guarded { try await catalog.database.run { try APIKeyStore.list($0, tenant: tenant) } }
        return .ok(.init(body: .json(.init(apiKeys: try keys.map(Components.Schemas.APIKey.init)))))
    }

    func revokeAPIKey(_ input: Operations.RevokeAPIKey.Input) async throws -> Operations.RevokeAPIKey.Output {
        let (tenant, id) = (input.path.tenant, input.path.key)
        guard let row = try await ControlAPI.guarded({ try await catalog.database.run { try APIKeyStore.find($0, tenant: tenant, id: id) } }) else {
            throw APIError.notFound("no API key \(id) of tenant \(tenant)")
        }
        try ControlAPI.requireHolds(Set(row.scopes.compactMap(APIScope.init(rawValue:))), Caller.principal, making: false)
        _ = try await ControlAPI.guarded { try await catalog.database.run { try APIKeyStore.revoke($0, tenant: tenant, id: id) } }
        ControlAPI.logger.info("API key revoked", metadata: ["tenant": "\(tenant)", "key_id": "\(id)", "by": "\(Caller.principal?.name ?? "-")"])
        return .noContent(.init())
    }
}

extension Components.Schemas.APIKey {
    /// A stored key as the document shows it.
    init(_ row: APIKeyStore.Row) throws {
        self.init(id: row.id, tenant: row.tenant, name: row.name, scopes: row.scopes.compactMap(Components.Schemas.Scope.init(rawValue:)),
                  createdBy: row.createdBy, createdAt: try MillisecondDates.date(row.createdAt),
                  lastUsedAt: try row.lastUsedAt.map(MillisecondDates.date), revokedAt: try row.revokedAt.map(MillisecondDates.date))
    }
}

extension ControlAPI {
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
