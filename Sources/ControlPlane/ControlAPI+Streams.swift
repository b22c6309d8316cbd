import Foundation
import Hummingbird
import StorecastRuntime

extension ControlAPI {
    /// A page of a list and where the next one starts (nil: this was the last).
    struct Page<Item: Encodable & Sendable>: Encodable, Sendable {
        var items: [Item]
        var next: String?
        let key: String
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: DynamicKey.self)
            try c.encode(items, forKey: DynamicKey(key))
            try c.encode(next, forKey: DynamicKey("next"))
        }
    }

    struct DynamicKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ s: String) { stringValue = s }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// `limit` (1–200, default 50) and `cursor` (a page's `next`) from the query.
    static func pageQuery(_ request: Request) throws -> (limit: Int, cursor: Int64?) {
        let query = request.uri.queryParameters
        guard let limit = Int(query.get("limit") ?? "50"), (1...200).contains(limit) else {
            throw APIError.badRequest("limit must be a whole number from 1 to 200", field: "limit")
        }
        guard let text = query.get("cursor") else { return (limit, nil) }
        guard let cursor = Int64(text), cursor > 0 else { throw APIError.badRequest("cursor must be the next value of a previous page", field: "cursor") }
        return (limit, cursor)
    }

    /// A tenant's streams, their live status and their session history (issue 16).
    static func streamRoutes(_ book: RouteBook, catalog: StreamCatalog) {
        book.on(.get, "tenants/:tenant/streams", .tenant(.streamsRead)) { request, context -> Response in
            let tenant = try context.parameters.require("tenant")
            let (limit, cursor) = try pageQuery(request)
            let state = request.uri.queryParameters.get("state")
            if let state, !StreamDirectory.states.contains(state) {
                throw APIError.badRequest("state must be one of \(StreamDirectory.states.joined(separator: ", "))", field: "state")
            }
            try await requireTenant(tenant, catalog)
            let streams = try await guarded { try await catalog.database.run { try StreamDirectory.list($0, tenant: tenant, state: state, after: cursor ?? 0, limit: limit) } }
            return try json(Page(items: streams, next: streams.count == limit ? streams.last.map { "\($0.id)" } : nil, key: "streams"))
        }
        book.on(.get, "tenants/:tenant/streams/:stream", .tenant(.streamsRead)) { _, context -> Response in
            let tenant = try context.parameters.require("tenant"), stream = try context.parameters.require("stream")
            guard let found = try await guarded({ try await catalog.database.run { try StreamDirectory.find($0, tenant: tenant, stream: stream) } }) else {
                throw APIError.notFound("no stream \(tenant)/\(stream)")
            }
            return try json(found)
        }
        // Settings, as a JSON merge patch: absent fields stay, null clears a nullable one.
        book.on(.patch, "tenants/:tenant/streams/:stream", .tenant(.streamsWrite)) { request, context -> Response in
            let tenant = try context.parameters.require("tenant"), stream = try context.parameters.require("stream")
            let change = try await decode(StreamSettingsChange.self, request, context)
            if let (field, message) = change.problem() { throw APIError.badRequest(message, field: field) }
            if change.recording != nil, case .tenant(_, _, let scopes) = context.principal, !scopes.contains(.recordings) {
                throw APIError.forbidden("Turning recording on or off needs the recordings scope; make a key that has it, or leave recording out.")
            }
            let updated: StreamDirectory.Stream?
            do {
                updated = try await guarded { try await catalog.database.run { try StreamDirectory.update($0, tenant: tenant, stream: stream, change) } }
            } catch let unknown as StreamDirectory.UnknownLadderProfile {
                throw APIError.badRequest("tenant \(tenant) has no ladder profile \(unknown.name); create it with POST /v1/tenants/\(tenant)/ladder-profiles", field: "ladderProfile")
            }
            guard let updated else { throw APIError.notFound("no stream \(tenant)/\(stream)") }
            return try json(updated)
        }
        // Deleting a stream deletes its sessions and recordings (their files go shortly after).
        book.on(.delete, "tenants/:tenant/streams/:stream", .tenant(.streamsWrite)) { _, context -> Response in
            let tenant = try context.parameters.require("tenant"), stream = try context.parameters.require("stream")
            // Its recordings go with it: a key without the recordings scope may delete it only without any.
            let withRecordings: Bool
            if case .tenant(_, _, let scopes) = context.principal { withRecordings = scopes.contains(.recordings) } else { withRecordings = true }
            switch try await guarded({ try await catalog.database.run { try RecordingDeletion.deleteStream($0, tenant: tenant, stream: stream, withRecordings: withRecordings) } }) {
            case .deleted: return Response(status: .noContent)
            case .notFound: throw APIError.notFound("no stream \(tenant)/\(stream)")
            case .live: throw APIError.conflict("stream \(tenant)/\(stream) is live; stop the publisher (and rotate its key so it cannot come back) before deleting it")
            case .stillRecording: throw APIError.conflict("a recording of \(tenant)/\(stream) is still being written; delete the stream once it is ready or failed")
            case .hasRecordings: throw APIError.forbidden("\(tenant)/\(stream) has recordings, which go with it: that needs the recordings scope. Delete its recordings first, or use a key that has it.")
            }
        }
        book.on(.get, "tenants/:tenant/streams/:stream/sessions", .tenant(.streamsRead)) { request, context -> Response in
            let tenant = try context.parameters.require("tenant"), stream = try context.parameters.require("stream")
            let (limit, cursor) = try pageQuery(request)
            guard let sessions = try await guarded({ try await catalog.database.run { try StreamDirectory.sessions($0, tenant: tenant, stream: stream, before: cursor ?? Int64.max, limit: limit) } }) else {
                throw APIError.notFound("no stream \(tenant)/\(stream)")
            }
            return try json(Page(items: sessions, next: sessions.count == limit ? sessions.last.map { "\($0.id)" } : nil, key: "sessions"))
        }
    }

    /// 404 unless `tenant` exists (a list of an unknown tenant's things is not an empty list).
    static func requireTenant(_ tenant: String, _ catalog: StreamCatalog) async throws {
        guard try await guarded({ try await catalog.database.run { try TenantStore.find($0, slug: tenant) } }) != nil else {
            throw APIError.notFound(AccessPolicy.notFoundMessage(tenant))
        }
    }
}
