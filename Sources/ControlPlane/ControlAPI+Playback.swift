import Foundation
import HTTPTypes
import Hummingbird
import OpenAPIRuntime
import StorecastRuntime

/// Where a stream plays and who may play it (issue 16): its packager's URLs and preview still,
/// public or private, tokens for private streams and the tenant's playback secret. Served from
/// the document's generated types, except the preview still's redirect (below): generated
/// code percent-encodes header values (apple/swift-openapi-generator#857), which would send
/// `Location: http%3A%2F%2F…`.
extension ControlAPIHandlers {
    func getPlayback(_ input: Operations.GetPlayback.Input) async throws -> Operations.GetPlayback.Output {
        let (tenant, stream) = (input.path.tenant, input.path.stream)
        let (node, base) = try await origin(tenant, stream)
        return .ok(.init(body: .json(.init(tenant: tenant, stream: stream, origin: node, playbackURL: "\(base)/live/\(tenant)/\(stream)/master.m3u8",
                                           thumbnailURL: "\(base)/live/\(tenant)/\(stream)/thumbnail.jpg"))))
    }

    /// Private streams: playback needs a signed token on every request.
    func setVisibility(_ input: Operations.SetVisibility.Input) async throws -> Operations.SetVisibility.Output {
        let (tenant, stream) = (input.path.tenant, input.path.stream)
        let body: Operations.SetVisibility.Input.Body.JsonPayload
        switch input.body { case .json(let json): body = json }
        guard try await ControlAPI.guarded({ try await playbackAccess.setVisibility(tenant: tenant, stream: stream, body.visibility.rawValue) }) else {
            throw APIError.notFound("no stream \(tenant)/\(stream)")
        }
        return .ok(.init(body: .json(.init(tenant: tenant, stream: stream, visibility: body.visibility))))
    }

    func createPlaybackToken(_ input: Operations.CreatePlaybackToken.Input) async throws -> Operations.CreatePlaybackToken.Output {
        let (tenant, stream) = (input.path.tenant, input.path.stream)
        let body: Operations.CreatePlaybackToken.Input.Body.JsonPayload
        switch input.body { case .json(let json): body = json }
        let seconds = body.ttlSeconds ?? 3600
        guard (1...PlaybackAccessStore.maximumTokenSeconds).contains(seconds) else {
            throw APIError.badRequest("ttlSeconds must be from 1 to \(PlaybackAccessStore.maximumTokenSeconds)", field: "ttlSeconds")
        }
        guard let issued = try await ControlAPI.guarded({ try await playbackAccess.issueToken(tenant: tenant, stream: stream, seconds: seconds) }) else {
            throw APIError.notFound("no stream \(tenant)/\(stream)")
        }
        let (_, base) = try await origin(tenant, stream)
        return .created(.init(body: .json(.init(token: issued.token, expiresAt: Int(issued.expiry),
                                                playbackURL: "\(base)/live/\(tenant)/\(stream)/master.m3u8?token=\(issued.token)"))))
    }

    /// A new playback secret for the tenant; the old one keeps playing for the grace period.
    func rotatePlaybackSecret(_ input: Operations.RotatePlaybackSecret.Input) async throws -> Operations.RotatePlaybackSecret.Output {
        let tenant = input.path.tenant
        let body: Operations.RotatePlaybackSecret.Input.Body.JsonPayload
        switch input.body { case .json(let json): body = json }
        let grace = body.graceSeconds ?? 3600
        guard (0...PlaybackAccessStore.maximumGraceSeconds).contains(grace) else {
            throw APIError.badRequest("graceSeconds must be from 0 to \(PlaybackAccessStore.maximumGraceSeconds)", field: "graceSeconds")
        }
        guard let until = try await ControlAPI.guarded({ try await playbackAccess.rotateSecret(tenant: tenant, graceSeconds: grace) }) else {
            throw APIError.notFound("no tenant \(tenant)")
        }
        return .ok(.init(body: .json(.init(tenant: tenant, previousSecretValidUntil: until))))
    }

    /// A stream's latest preview still: the packager serves it; the API sends callers there.
    func getThumbnail(_ input: Operations.GetThumbnail.Input) async throws -> Operations.GetThumbnail.Output {
        let (tenant, stream) = (input.path.tenant, input.path.stream)
        let (_, base) = try await origin(tenant, stream)
        return .found(.init(headers: .init(location: "\(base)/live/\(tenant)/\(stream)/thumbnail.jpg", cacheControl: "max-age=2")))
    }

    var playbackAccess: PlaybackAccessStore { PlaybackAccessStore(database: catalog.database) }

    /// The packager a stream plays from (PostgreSQL: the one ingest placed it on, or where
    /// rendezvous hashing will place it), or the configured base when none is registered.
    func origin(_ tenant: String, _ stream: String) async throws -> (node: String?, base: String) {
        guard let origin = try await ControlAPI.guarded({ try await catalog.database.run { try NodeRegistry.origin($0, tenant: tenant, stream: stream) } }) else {
            throw APIError.notFound("no stream \(tenant)/\(stream)")
        }
        return (origin.node?.id, origin.node?.publicURL ?? playbackBaseURL)
    }
}
