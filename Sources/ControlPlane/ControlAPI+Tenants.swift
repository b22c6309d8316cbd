import Foundation
import OpenAPIRuntime
import PostgresClient
import StorecastRuntime
import StorecastWire

/// The operator's tenants: create, list, one, change, delete, suspend, resume (issue 16). A
/// tenant's key may read its own. Served from the document's generated types.
extension ControlAPIHandlers {
    func createTenant(_ input: Operations.CreateTenant.Input) async throws -> Operations.CreateTenant.Output {
        let body: Operations.CreateTenant.Input.Body.JsonPayload
        switch input.body { case .json(let json): body = json }
        guard Slug.isValid(body.slug) else { throw APIError.badRequest("slug must be \(Slug.rule)", field: "slug") }
        // The generated decoder checks types, not ranges: the same rules as a PATCH.
        if let (field, message) = TenantStore.Change(name: body.name, maxConcurrentStreams: body.maxConcurrentStreams).problem() {
            throw APIError.badRequest(message, field: field)
        }
        let id: Int64
        do {
            id = try await ControlAPI.guarded {
                try await catalog.createTenant(slug: body.slug, name: body.name ?? body.slug, maxConcurrentStreams: body.maxConcurrentStreams ?? 10, ifExists: .refuse)
            }
        } catch let error as PostgresError where error.code == .uniqueViolation {
            throw APIError.conflict("tenant \(body.slug) already exists", field: "slug")
        }
        return .created(.init(body: .json(.init(id: Int(id), slug: body.slug))))
    }

    func listTenants(_ input: Operations.ListTenants.Input) async throws -> Operations.ListTenants.Output {
        let tenants = try await ControlAPI.guarded { try await catalog.database.run { try TenantStore.list($0) } }
        return .ok(.init(body: .json(.init(tenants: try tenants.map(Components.Schemas.Tenant.init)))))
    }

    func getTenant(_ input: Operations.GetTenant.Input) async throws -> Operations.GetTenant.Output {
        .ok(.init(body: .json(try .init(try await tenant(input.path.tenant)))))
    }

    /// Its name and quotas (absent fields stay); a lower quota applies to what starts next.
    func updateTenant(_ input: Operations.UpdateTenant.Input) async throws -> Operations.UpdateTenant.Output {
        let tenant = input.path.tenant
        let body: Operations.UpdateTenant.Input.Body.JsonPayload
        switch input.body { case .json(let json): body = json }
        let change = TenantStore.Change(name: body.name, maxConcurrentStreams: body.maxConcurrentStreams, storageQuotaBytes: body.storageQuotaBytes.map(Int64.init),
                                        maxSourceShortSide: body.maxSourceShortSide, maxSourceFrameRate: body.maxSourceFrameRate,
                                        maxRenditionShortSide: body.maxRenditionShortSide, maxRestreamTargets: body.maxRestreamTargets)
        if let (field, message) = change.problem() { throw APIError.badRequest(message, field: field) }
        guard let updated = try await ControlAPI.guarded({ try await catalog.database.run { try TenantStore.update($0, slug: tenant, change) } }) else {
            throw APIError.notFound(AccessPolicy.notFoundMessage(tenant))
        }
        ControlAPI.logger.info("tenant changed", metadata: ["tenant": "\(tenant)"])
        return .ok(.init(body: .json(try .init(updated))))
    }

    /// Everything it has goes; its recordings' files are removed by the packagers that wrote them.
    func deleteTenant(_ input: Operations.DeleteTenant.Input) async throws -> Operations.DeleteTenant.Output {
        let tenant = input.path.tenant
        switch try await ControlAPI.guarded({ try await catalog.database.run { try TenantStore.delete($0, slug: tenant) } }) {
        case .deleted:
            ControlAPI.logger.notice("tenant deleted", metadata: ["tenant": "\(tenant)"])
            return .noContent(.init())
        case .notFound: throw APIError.notFound(AccessPolicy.notFoundMessage(tenant))
        case .busy(let why): throw APIError.conflict("tenant \(tenant) cannot be deleted now: \(why). Suspend it (its streams cannot start again), wait for its shows to end, then delete it")
        }
    }

    /// Suspended: its keys are refused and its streams cannot start (shows already live go on).
    func suspendTenant(_ input: Operations.SuspendTenant.Input) async throws -> Operations.SuspendTenant.Output {
        .ok(.init(body: .json(try .init(try await setSuspended(input.path.tenant, true)))))
    }

    func resumeTenant(_ input: Operations.ResumeTenant.Input) async throws -> Operations.ResumeTenant.Output {
        .ok(.init(body: .json(try .init(try await setSuspended(input.path.tenant, false)))))
    }

    private func tenant(_ slug: String) async throws -> TenantStore.Row {
        guard let found = try await ControlAPI.guarded({ try await catalog.database.run { try TenantStore.find($0, slug: slug) } }) else {
            throw APIError.notFound(AccessPolicy.notFoundMessage(slug))
        }
        return found
    }

    private func setSuspended(_ slug: String, _ suspended: Bool) async throws -> TenantStore.Row {
        guard try await ControlAPI.guarded({ try await catalog.database.run { try TenantStore.setSuspended($0, slug: slug, suspended) } }) else {
            throw APIError.notFound(AccessPolicy.notFoundMessage(slug))
        }
        ControlAPI.logger.info(suspended ? "tenant suspended" : "tenant resumed", metadata: ["tenant": "\(slug)"])
        return try await tenant(slug)
    }
}

extension Components.Schemas.Tenant {
    /// A stored tenant as the document shows it.
    init(_ row: TenantStore.Row) throws {
        self.init(slug: row.slug, name: row.name, maxConcurrentStreams: row.maxConcurrentStreams, storageQuotaBytes: Int(row.storageQuotaBytes),
                  maxSourceShortSide: row.maxSourceShortSide, maxSourceFrameRate: row.maxSourceFrameRate, maxRenditionShortSide: row.maxRenditionShortSide,
                  maxRestreamTargets: row.maxRestreamTargets, suspendedAt: try row.suspendedAt.map(MillisecondDates.date), liveStreams: row.liveStreams, createdAt: try MillisecondDates.date(row.createdAt))
    }
}

extension ControlAPIHandlers {
    /// Fair share: the largest source the tenant may publish.
    func setSourceLimits(_ input: Operations.SetSourceLimits.Input) async throws -> Operations.SetSourceLimits.Output {
        let tenant = input.path.tenant
        let body: Operations.SetSourceLimits.Input.Body.JsonPayload
        switch input.body { case .json(let json): body = json }
        guard (144...4320).contains(body.maxShortSide), (1...240).contains(body.maxFrameRate) else {
            throw APIError.badRequest("maxShortSide must be from 144 to 4320 and maxFrameRate from 1 to 240")
        }
        let limits = SourceLimits(maximumShortSide: body.maxShortSide, maximumFrameRate: body.maxFrameRate)
        guard try await ControlAPI.guarded({ try await catalog.setSourceLimits(tenantSlug: tenant, limits) }) else {
            throw APIError.notFound("no tenant \(tenant)")
        }
        return .ok(.init(body: .json(.init(tenant: tenant, maxShortSide: body.maxShortSide, maxFrameRate: body.maxFrameRate))))
    }
}
