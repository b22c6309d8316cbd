import Foundation
import Hummingbird
import StorecastRuntime

extension ControlAPI {
    /// The operator's tenants: list, one, change, delete, suspend, resume (issue 16). A tenant's key may read its own.
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
        // Its name and quotas (absent fields stay); a lower quota applies to what starts next.
        book.on(.patch, "tenants/:tenant", .operator) { request, context -> Response in
            let tenant = try context.parameters.require("tenant")
            let change = try await decode(TenantStore.Change.self, request, context)
            if let (field, message) = change.problem() { throw APIError.badRequest(message, field: field) }
            guard let updated = try await guarded({ try await catalog.database.run { try TenantStore.update($0, slug: tenant, change) } }) else {
                throw APIError.notFound(AccessPolicy.notFoundMessage(tenant))
            }
            logger.info("tenant changed", metadata: ["tenant": "\(tenant)"])
            return try json(updated)
        }
        // Everything it has goes; its recordings' files are removed by the packagers that wrote them.
        book.on(.delete, "tenants/:tenant", .operator) { _, context -> Response in
            let tenant = try context.parameters.require("tenant")
            switch try await guarded({ try await catalog.database.run { try TenantStore.delete($0, slug: tenant) } }) {
            case .deleted:
                logger.notice("tenant deleted", metadata: ["tenant": "\(tenant)"])
                return Response(status: .noContent)
            case .notFound: throw APIError.notFound(AccessPolicy.notFoundMessage(tenant))
            case .busy(let why): throw APIError.conflict("tenant \(tenant) cannot be deleted now: \(why). Suspend it (its streams cannot start again), wait for its shows to end, then delete it")
            }
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
