import Foundation
import Hummingbird
import StorecastRuntime

extension ControlAPI {
    /// The operator's tenants: list, one, suspend, resume (issue 16). A tenant's key may read its own.
    static func tenantRoutes(_ book: RouteBook, catalog: StreamCatalog) {
        book.on(.get, "tenants", .operator) { _, _ -> Response in
            let tenants = try await guarded { try await catalog.database.run { try TenantStore.list($0) } }
            return try json(["tenants": tenants])
        }
        book.on(.get, "tenants/:tenant", .tenant(nil)) { _, context -> Response in
            let tenant = try context.parameters.require("tenant")
            guard let found = try await guarded({ try await catalog.database.run { try TenantStore.find($0, slug: tenant) } }) else {
                throw APIError.notFound(AccessPolicy.notFoundMessage(tenant))
            }
            return try json(found)
        }
        // Suspended: its keys are refused and its streams cannot start (shows already live go on).
        for (action, suspended) in [("suspend", true), ("resume", false)] {
            book.on(.post, "tenants/:tenant/\(action)", .operator) { _, context -> Response in
                let tenant = try context.parameters.require("tenant")
                guard try await guarded({ try await catalog.database.run { try TenantStore.setSuspended($0, slug: tenant, suspended) } }),
                      let found = try await guarded({ try await catalog.database.run { try TenantStore.find($0, slug: tenant) } }) else {
                    throw APIError.notFound(AccessPolicy.notFoundMessage(tenant))
                }
                logger.info(suspended ? "tenant suspended" : "tenant resumed", metadata: ["tenant": "\(tenant)"])
                return try json(found)
            }
        }
    }
}
