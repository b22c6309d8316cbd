import Foundation
import HTTPTypes
import Hummingbird
import Logging

/// HTTP routes of the packager origin: playlists, init segments and media segments from memory,
/// plus the player page.
enum PackagerHTTP {
    static let playlistType = "application/vnd.apple.mpegurl"

    static func router(store: PackageStore, targetDuration: Double, hlsJSURL: String?) -> Router<BasicRequestContext> {
        let router = Router()
        router.add(middleware: CORSMiddleware(allowOrigin: .all, allowHeaders: [.contentType, .range], allowMethods: [.get, .head, .options]))
        router.get("/healthz") { _, _ in "ok" }
        router.get("/") { _, _ -> Response in
            let list = store.keys().map { key in (key: key, live: !(store.package(key)?.ended ?? true)) }
            return html(PlayerPage.index(streams: list))
        }
        router.get("/play/:tenant/:stream") { _, context -> Response in
            let tenant = try context.parameters.require("tenant"), stream = try context.parameters.require("stream")
            return html(PlayerPage.html(title: "\(tenant)/\(stream)", playlistURL: "/live/\(tenant)/\(stream)/master.m3u8", hlsJSURL: hlsJSURL))
        }
        router.get("/live/:tenant/:stream/master.m3u8") { _, context -> Response in
            let package = try lookup(store, context)
            guard package.isReady else {
                throw HTTPError(.notFound, message: "The stream has started but its first segments are not ready yet; retry in a second.")
            }
            return body(package.multivariantPlaylist(), type: playlistType, cache: "max-age=1")
        }
        // The feed's preview: the latest still, replaced every few seconds of stream time.
        router.get("/live/:tenant/:stream/thumbnail.jpg") { _, context -> Response in
            guard let still = try lookup(store, context).thumbnail else {
                throw HTTPError(.notFound, message: "No preview yet: the first one comes with the first decoded frame.")
            }
            return bytes(still.jpeg, type: "image/jpeg", cache: "max-age=2")
        }
        router.get("/live/:tenant/:stream/:rendition/index.m3u8") { _, context -> Response in
            let rendition = try lookupRendition(store, context)
            let text = rendition.mediaPlaylist(segmentURI: { "seg-\($0).m4s" }, initURI: "init.mp4", targetDuration: targetDuration)
            return body(text, type: playlistType, cache: rendition.ended ? "max-age=60" : "max-age=1")
        }
        router.get("/live/:tenant/:stream/:rendition/init.mp4") { _, context -> Response in
            let rendition = try lookupRendition(store, context)
            return bytes(rendition.initSegment, type: "video/mp4", cache: "max-age=31536000, immutable")
        }
        router.get("/live/:tenant/:stream/:rendition/:segment") { _, context -> Response in
            let rendition = try lookupRendition(store, context)
            let name = try context.parameters.require("segment")
            guard name.hasPrefix("seg-"), name.hasSuffix(".m4s"), let number = Int(name.dropFirst(4).dropLast(4)) else {
                throw HTTPError(.badRequest, message: "Segment names look like seg-<number>.m4s.")
            }
            guard let segment = rendition.segments.first(where: { $0.sequence == number }) else {
                throw HTTPError(.notFound, message: "Segment \(number) is not in the live window.")
            }
            return bytes(segment.bytes, type: "video/iso.segment", cache: "max-age=31536000, immutable")
        }
        return router
    }

    private static func lookup(_ store: PackageStore, _ context: BasicRequestContext) throws -> StreamPackage {
        let tenant = try context.parameters.require("tenant"), stream = try context.parameters.require("stream")
        guard let package = store.package(PackageStore.key(tenant: tenant, stream: stream)) else {
            throw HTTPError(.notFound, message: "No stream \(tenant)/\(stream) on this packager. Is the publisher live?")
        }
        return package
    }

    private static func lookupRendition(_ store: PackageStore, _ context: BasicRequestContext) throws -> RenditionPackage {
        let package = try lookup(store, context)
        let name = try context.parameters.require("rendition")
        guard let rendition = package.renditions[name] else {
            throw HTTPError(.notFound, message: "No rendition \(name); see master.m3u8 for the list.")
        }
        return rendition
    }

    private static func html(_ text: String) -> Response {
        body(text, type: "text/html; charset=utf-8", cache: "no-cache")
    }

    private static func body(_ text: String, type: String, cache: String) -> Response {
        bytes(Array(text.utf8), type: type, cache: cache)
    }

    private static func bytes(_ data: [UInt8], type: String, cache: String) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = type
        headers[.cacheControl] = cache
        headers[.contentLength] = String(data.count)
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
