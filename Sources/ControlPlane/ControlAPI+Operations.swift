import Foundation
import OpenAPIRuntime
import StorecastRuntime

/// The operator's views across tenants (every stream, the transcoder leases), served from the
/// document's generated types.
extension ControlAPIHandlers {
    func listAllStreams(_ input: Operations.ListAllStreams.Input) async throws -> Operations.ListAllStreams.Output {
        let streams = try await ControlAPI.guarded { try await catalog.listStreams(tenantSlug: input.query.tenant) }
        return .ok(.init(body: .json(.init(streams: try streams.map { stream in
            guard let status = Components.Schemas.State(rawValue: stream.status) else {
                throw APIError(status: .internalServerError, code: "internal", message: "A stored stream has a state the document does not name.")
            }
            return .init(id: Int(stream.id), tenant: stream.tenant, slug: stream.slug, title: stream.title, status: status, keyPrefix: stream.keyPrefix)
        }))))
    }

    /// Which transcoder worker holds each stream (current leases, or history with current=false).
    func listLeases(_ input: Operations.ListLeases.Input) async throws -> Operations.ListLeases.Output {
        let current = (input.query.current ?? ._true) == ._true
        let limit = input.query.limit ?? 200
        guard (1...1000).contains(limit) else { throw APIError.badRequest("limit must be a whole number from 1 to 1000", field: "limit") }
        let leases = try await ControlAPI.guarded { try await LeaseLedger.list(in: catalog.database, currentOnly: current, limit: limit) }
        return .ok(.init(body: .json(.init(leases: leases.map {
            .init(id: Int($0.id), streamID: Int($0.streamID), tenant: $0.tenant, stream: $0.stream, workerID: $0.workerID, ingestNode: $0.ingestNode,
                  grantedAt: $0.grantedAt, endedAt: $0.endedAt, endReason: $0.endReason)
        }))))
    }
}
