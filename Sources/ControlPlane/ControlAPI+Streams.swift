import Foundation
import OpenAPIRuntime
import PostgresClient
import StorecastRuntime
import StorecastWire

extension ControlAPI {
    /// `limit` (1–200, default 50) and `cursor` (a page's `next`) of a list's query.
    static func page(limit: Int?, cursor: String?) throws -> (limit: Int, cursor: Int64?) {
        let limit = limit ?? 50
        guard (1...200).contains(limit) else { throw APIError.badRequest("limit must be a whole number from 1 to 200", field: "limit") }
        guard let cursor else { return (limit, nil) }
        guard let value = Int64(cursor), value > 0 else { throw APIError.badRequest("cursor must be the next value of a previous page", field: "cursor") }
        return (limit, value)
    }

    /// 404 unless `tenant` exists (a list of an unknown tenant's things is not an empty list).
    static func requireTenant(_ tenant: String, _ catalog: StreamCatalog) async throws {
        guard try await guarded({ try await catalog.database.run { try TenantStore.find($0, slug: tenant) } }) != nil else {
            throw APIError.notFound(AccessPolicy.notFoundMessage(tenant))
        }
    }
}

/// A tenant's streams, served from the document's generated types: their pages, live status
/// and session history (issue 16), making, keying, settings, ladder profiles and deletion.
extension ControlAPIHandlers {
    func listStreams(_ input: Operations.ListStreams.Input) async throws -> Operations.ListStreams.Output {
        let tenant = input.path.tenant
        let (limit, cursor) = try ControlAPI.page(limit: input.query.limit, cursor: input.query.cursor)
        try await ControlAPI.requireTenant(tenant, catalog)
        let streams = try await ControlAPI.guarded {
            try await catalog.database.run { try StreamDirectory.list($0, tenant: tenant, state: input.query.state?.rawValue, after: cursor ?? 0, limit: limit) }
        }
        return .ok(.init(body: .json(.init(items: streams, limit: limit) { $0.id })))
    }

    /// One stream: its settings, state, open session and, while live, health, renditions and viewers.
    func getStream(_ input: Operations.GetStream.Input) async throws -> Operations.GetStream.Output {
        let (tenant, stream) = (input.path.tenant, input.path.stream)
        guard let found = try await ControlAPI.guarded({ try await catalog.database.run { try StreamDirectory.find($0, tenant: tenant, stream: stream) } }) else {
            throw APIError.notFound("no stream \(tenant)/\(stream)")
        }
        return .ok(.init(body: .json(found)))
    }

    /// Settings, as a JSON merge patch: absent fields stay, null clears a nullable one.
    func updateStream(_ input: Operations.UpdateStream.Input) async throws -> Operations.UpdateStream.Output {
        let (tenant, stream) = (input.path.tenant, input.path.stream)
        let change: StreamSettingsChange
        switch input.body { case .json(let json): change = json }
        if let (field, message) = change.problem() { throw APIError.badRequest(message, field: field) }
        if change.recording != nil, case .tenant(_, _, let scopes) = Caller.principal, !scopes.contains(.recordings) {
            throw APIError.forbidden("Turning recording on or off needs the recordings scope; make a key that has it, or leave recording out.")
        }
        let updated: StreamDirectory.Stream?
        do {
            updated = try await ControlAPI.guarded { try await catalog.database.run { try StreamDirectory.update($0, tenant: tenant, stream: stream, change) } }
        } catch let unknown as StreamDirectory.UnknownLadderProfile {
            throw APIError.badRequest("tenant \(tenant) has no ladder profile \(unknown.name); create it with POST /v1/tenants/\(tenant)/ladder-profiles", field: "ladderProfile")
        }
        guard let updated else { throw APIError.notFound("no stream \(tenant)/\(stream)") }
        return .ok(.init(body: .json(updated)))
    }

    /// The stream's sessions, newest first, each with why it ended.
    func listSessions(_ input: Operations.ListSessions.Input) async throws -> Operations.ListSessions.Output {
        let (tenant, stream) = (input.path.tenant, input.path.stream)
        let (limit, cursor) = try ControlAPI.page(limit: input.query.limit, cursor: input.query.cursor)
        guard let sessions = try await ControlAPI.guarded({
            try await catalog.database.run { try StreamDirectory.sessions($0, tenant: tenant, stream: stream, before: cursor ?? Int64.max, limit: limit) }
        }) else {
            throw APIError.notFound("no stream \(tenant)/\(stream)")
        }
        return .ok(.init(body: .json(.init(items: sessions, limit: limit) { $0.id })))
    }

    /// A stream's own ladder profile, or null for the tenant's default (from the next publish).
    func setStreamLadderProfile(_ input: Operations.SetStreamLadderProfile.Input) async throws -> Operations.SetStreamLadderProfile.Output {
        let (tenant, stream) = (input.path.tenant, input.path.stream)
        let choice: StreamLadderProfileChoice
        switch input.body { case .json(let json): choice = json }
        try await ControlAPI.problems {
            try await ControlAPI.guarded { try await LadderProfileStore(database: catalog.database).assign(tenantSlug: tenant, streamSlug: stream, profileName: choice.name) }
        }
        return .ok(.init(body: .json(.init(tenant: tenant, stream: stream, ladderProfile: choice.name ?? "tenant default"))))
    }

    func createStream(_ input: Operations.CreateStream.Input) async throws -> Operations.CreateStream.Output {
        let tenant = input.path.tenant
        let body: Operations.CreateStream.Input.Body.JsonPayload
        switch input.body { case .json(let json): body = json }
        guard Slug.isValid(body.slug) else { throw APIError.badRequest("slug must be \(Slug.rule)", field: "slug") }
        guard (body.title ?? "").count <= 200 else { throw APIError.badRequest("title is at most 200 characters", field: "title") }
        let created: CreatedStream
        do {
            created = try await catalog.createStream(tenantSlug: tenant, slug: body.slug, title: body.title ?? "", visibility: body.visibility?.rawValue ?? "public")
        } catch let error as PostgresError where error.code == .uniqueViolation {
            throw APIError.conflict("tenant \(tenant) already has a stream \(body.slug)", field: "slug")
        } catch let error as PostgresError where error.code == .queryFailed && error.sqlState == nil {
            throw APIError.notFound(error.message)
        } catch is PostgresError {
            throw APIError.unavailable
        }
        return .created(.init(body: .json(.init(
            id: Int(created.streamID), tenant: tenant, slug: created.streamSlug, streamKey: created.streamKey, publishURL: "\(rtmpBaseURL)/live/\(created.streamKey)",
            playbackURL: "\(playbackBaseURL)/live/\(tenant)/\(created.streamSlug)/master.m3u8", thumbnailURL: "\(playbackBaseURL)/live/\(tenant)/\(created.streamSlug)/thumbnail.jpg"))))
    }

    /// A new stream key, shown once; the old one publishes on for the grace period (0 by default).
    func rotateStreamKey(_ input: Operations.RotateStreamKey.Input) async throws -> Operations.RotateStreamKey.Output {
        let (tenant, stream) = (input.path.tenant, input.path.stream)
        let body: Operations.RotateStreamKey.Input.Body.JsonPayload
        switch input.body { case .json(let json): body = json }
        let grace = body.graceSeconds ?? 0
        guard (0...604_800).contains(grace) else { throw APIError.badRequest("graceSeconds must be from 0 to 604800", field: "graceSeconds") }
        guard let rotated = try await ControlAPI.guarded({ try await catalog.rotateKey(tenantSlug: tenant, streamSlug: stream, graceSeconds: grace) }) else {
            throw APIError.notFound("no stream \(tenant)/\(stream)")
        }
        ControlAPI.logger.info("stream key rotated", metadata: ["tenant": "\(tenant)", "stream": "\(stream)", "grace_seconds": "\(grace)"])
        return .ok(.init(body: .json(.init(tenant: tenant, stream: stream, streamKey: rotated.key, publishURL: "\(rtmpBaseURL)/live/\(rotated.key)",
                                           previousKeyValidUntil: try rotated.previousValidUntil.map(MillisecondDates.date)))))
    }

    /// Deleting a stream deletes its sessions and recordings (their files go shortly after).
    func deleteStream(_ input: Operations.DeleteStream.Input) async throws -> Operations.DeleteStream.Output {
        let (tenant, stream) = (input.path.tenant, input.path.stream)
        // Its recordings go with it: a key without the recordings scope may delete it only without any.
        guard let principal = Caller.principal else { throw APIError.unauthorized }
        let withRecordings: Bool
        if case .tenant(_, _, let scopes) = principal { withRecordings = scopes.contains(.recordings) } else { withRecordings = true }
        switch try await ControlAPI.guarded({ try await catalog.database.run { try RecordingDeletion.deleteStream($0, tenant: tenant, stream: stream, withRecordings: withRecordings) } }) {
        case .deleted: return .noContent(.init())
        case .notFound: throw APIError.notFound("no stream \(tenant)/\(stream)")
        case .live: throw APIError.conflict("stream \(tenant)/\(stream) is live; stop the publisher (and rotate its key so it cannot come back) before deleting it")
        case .stillRecording: throw APIError.conflict("a recording of \(tenant)/\(stream) is still being written; delete the stream once it is ready or failed")
        case .hasRecordings: throw APIError.forbidden("\(tenant)/\(stream) has recordings, which go with it: that needs the recordings scope. Delete its recordings first, or use a key that has it.")
        }
    }

    /// Ladder profiles: how a tenant's streams are transcoded.
    func saveLadderProfile(_ input: Operations.SaveLadderProfile.Input) async throws -> Operations.SaveLadderProfile.Output {
        let tenant = input.path.tenant
        let body: Operations.SaveLadderProfile.Input.Body.JsonPayload
        switch input.body { case .json(let json): body = json }
        let profile = try await ControlAPI.problems {
            try LadderProfileStore.validated(name: body.name, rungs: body.rungs.map { .init(name: $0.name, shortSide: $0.shortSide, bitrate: $0.bitrate) },
                                             preset: body.preset?.rawValue ?? "veryfast", gopSeconds: body.gopSeconds?.rawValue ?? 2, lowLatency: body.lowLatency ?? true)
        }
        let makeDefault = body._default ?? false
        try await ControlAPI.problems { try await ControlAPI.guarded { try await LadderProfileStore(database: catalog.database).save(tenantSlug: tenant, profile: profile, makeDefault: makeDefault) } }
        return .created(.init(body: .json(.init(
            tenant: tenant, name: profile.name, rungs: profile.rungs.map(LadderProfileStore.RungJSON.init).map { .init(name: $0.name, shortSide: $0.shortSide, bitrate: $0.bitrate) },
            preset: profile.preset, gopSeconds: Int(profile.gopSeconds), lowLatency: profile.lowLatency, _default: makeDefault))))
    }
}
