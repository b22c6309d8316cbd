import Foundation
import OpenAPIRuntime
import StorecastRuntime
import StorecastWire

/// Recordings (issue 16; scope `recordings`): on or off per stream, each recorded session a row
/// with its state, deletion, and the tenant's storage against its quota. Served from the
/// document's generated types.
extension ControlAPIHandlers {
    func setRecording(_ input: Operations.SetRecording.Input) async throws -> Operations.SetRecording.Output {
        let (tenant, stream) = (input.path.tenant, input.path.stream)
        let body: Operations.SetRecording.Input.Body.JsonPayload
        switch input.body { case .json(let json): body = json }
        guard try await ControlAPI.guarded({ try await catalog.database.run { try RecordingStore.setEnabled($0, tenant: tenant, stream: stream, body.enabled) } }) else {
            throw APIError.notFound("no stream \(tenant)/\(stream)")
        }
        return .ok(.init(body: .json(.init(tenant: tenant, stream: stream, recording: body.enabled ? .on : .off))))
    }

    func listRecordings(_ input: Operations.ListRecordings.Input) async throws -> Operations.ListRecordings.Output {
        let (tenant, stream) = (input.path.tenant, input.path.stream)
        // An unknown stream's recordings are not an empty list.
        guard let rows = try await ControlAPI.guarded({ try await catalog.database.run { db -> [RecordingStore.Row]? in
            try StreamDirectory.exists(db, tenant: tenant, stream: stream) ? try RecordingStore.list(db, tenant: tenant, stream: stream) : nil
        } }) else {
            throw APIError.notFound("no stream \(tenant)/\(stream)")
        }
        return .ok(.init(body: .json(.init(recordings: try rows.map(Components.Schemas.Recording.init)))))
    }

    /// Deleting a recording frees its bytes of the tenant's quota at once; the packager that
    /// wrote it removes the files within seconds.
    func deleteRecording(_ input: Operations.DeleteRecording.Input) async throws -> Operations.DeleteRecording.Output {
        let (tenant, stream) = (input.path.tenant, input.path.stream)
        guard let id = Int64(input.path.recording), id > 0 else { throw APIError.notFound("no recording \(tenant)/\(stream)/\(input.path.recording)") }
        switch try await ControlAPI.guarded({ try await catalog.database.run { try RecordingDeletion.deleteRecording($0, tenant: tenant, stream: stream, id: id) } }) {
        case .deleted: return .noContent(.init())
        case .notFound, .live, .hasRecordings: throw APIError.notFound("no recording \(id) of \(tenant)/\(stream)")
        case .stillRecording: throw APIError.conflict("recording \(id) is still being written; delete it once the session ends and it is ready or failed")
        }
    }

    /// Fair share of disk: what the tenant may keep in recordings and DVR media.
    func setStorageQuota(_ input: Operations.SetStorageQuota.Input) async throws -> Operations.SetStorageQuota.Output {
        let tenant = input.path.tenant
        let body: Operations.SetStorageQuota.Input.Body.JsonPayload
        switch input.body { case .json(let json): body = json }
        guard (0...(1 << 50)).contains(body.bytes) else { throw APIError.badRequest("bytes must be from 0 to \(1 << 50)", field: "bytes") }
        guard try await ControlAPI.guarded({ try await catalog.database.run { try RecordingStore.setQuota($0, tenant: tenant, bytes: Int64(body.bytes)) } }) else {
            throw APIError.notFound("no tenant \(tenant)")
        }
        return .ok(.init(body: .json(.init(tenant: tenant, quotaBytes: body.bytes))))
    }

    /// The tenant's recordings against its quota ("full": recordings stop, DVR is not archived).
    func getStorage(_ input: Operations.GetStorage.Input) async throws -> Operations.GetStorage.Output {
        let tenant = input.path.tenant
        guard Slug.isValid(tenant),
              let use = try await ControlAPI.guarded({ try await catalog.database.run { try RecordingStore.usage($0, tenants: [tenant], node: "")[tenant] } }) else {
            throw APIError.notFound("no tenant \(tenant)")
        }
        return .ok(.init(body: .json(.init(tenant: tenant, quotaBytes: Int(use.quotaBytes), recordingsBytes: Int(use.recordedBytes),
                                           state: use.recordedBytes >= use.quotaBytes ? .full : .ok))))
    }
}

extension Components.Schemas.Recording {
    /// A stored recording as the document shows it.
    init(_ row: RecordingStore.Row) throws {
        guard let state = StatePayload(rawValue: row.state) else {
            throw APIError(status: .internalServerError, code: "internal", message: "A stored recording has a state the document does not name.")
        }
        self.init(id: Int(row.id), tenant: row.tenant, stream: row.stream, packagerNode: row.packagerNode, path: row.path, state: state, error: row.error,
                  durationSeconds: row.durationSeconds, bytes: Int(row.bytes), startedAt: row.startedAt, endedAt: row.endedAt)
    }
}
