import Foundation
import HLS
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Metrics
import StorecastRuntime
import StorecastWire

/// How the origin serves: segment and part targets and how long a blocked request may wait.
public struct OriginSettings: Sendable {
    public var targetDuration: Double
    /// nil serves plain HLS (no parts, no blocking reload).
    public var lowLatency: LowLatencySettings?
    public var hlsJSURL: String?
    public var hlsJS: [UInt8]?
    /// The player the page prefers where the browser has both.
    public var preferredPlayer: PlayerPreference = .auto
    /// The control API's base URL as players reach it: the page waits on a stream's events
    /// there (nil: it polls the playlist).
    public var eventsBaseURL: String?
    /// Where segments that left the in-memory window are read from (nil: no DVR).
    public var dvr: DVRArchive?
    /// Proxy addresses whose `X-Forwarded-For` is believed (``ClientAddress``).
    public var trustedProxies: Set<String> = []
    /// The longest a blocking playlist or preload-hinted part request is held: three target
    /// durations, after which it gets 503 (the draft leaves the bound to the server).
    public var blockTimeout: Duration { .milliseconds(Int64(targetDuration * 3_000)) }

    public init(targetDuration: Double, lowLatency: LowLatencySettings?, hlsJSURL: String? = nil, hlsJS: [UInt8]? = nil, dvr: DVRArchive? = nil) {
        self.dvr = dvr
        self.hlsJS = hlsJS
        self.targetDuration = targetDuration
        self.lowLatency = lowLatency
        self.hlsJSURL = hlsJSURL
    }
}

/// HTTP routes of the packager origin: playlists, init segments, segments and parts from memory,
/// plus the player page. Playlists carry an ETag and answer If-None-Match with 304; blocking
/// requests are `no-store`, media is immutable.
enum PackagerHTTP {
    static let playlistType = "application/vnd.apple.mpegurl"
    static let blockedRequests = Counter(label: "storecast_packager_blocking_requests_total")
    static let blockTimeouts = Counter(label: "storecast_packager_blocking_timeouts_total")
    static let badDirectives = Counter(label: "storecast_packager_bad_directives_total")

    static func router(store: PackageStore, settings: OriginSettings, gate: PlaybackGate, viewers: ViewerAccounting) -> Router<PackagerRequestContext> {
        // HEAD answers every GET route with the GET's status and header fields and no body
        // (RFC 9110 9.3.2: CDNs and operators' probes ask HEAD; without it every HEAD was a 404).
        let router = Router(context: PackagerRequestContext.self, options: .autoGenerateHeadEndpoints)
        let rendered = PlaylistRenderCache()
        router.add(middleware: PublicCORSMiddleware())
        router.get("/healthz") { _, _ in "ok" }
        // Public streams only: a private show's name is not for anyone who finds the origin.
        router.get("/") { _, _ -> Response in
            var list: [(key: String, live: Bool)] = []
            for key in store.keys() {
                let parts = key.split(separator: "/", maxSplits: 1).map(String.init)
                guard parts.count == 2, await gate.isListed(tenant: parts[0], stream: parts[1]) else { continue }
                list.append((key: key, live: !(store.package(key)?.ended ?? true)))
            }
            return html(PlayerPage.index(streams: list))
        }
        if let script = settings.hlsJS {
            router.get("/assets/hls.js") { _, _ in bytes(script, type: "text/javascript; charset=utf-8", cache: "max-age=86400") }
        }
        router.get("/play/:tenant/:stream") { request, context -> Response in
            let tenant = try context.parameters.require("tenant"), stream = try context.parameters.require("stream")
            guard Slug.isValid(tenant), Slug.isValid(stream) else { throw HTTPError(.notFound) }
            let token = tokenQuery(request)
            let events = settings.eventsBaseURL.map { "\($0)/v1/tenants/\(tenant)/streams/\(stream)/events\(token)" }
            return html(PlayerPage.html(title: "\(tenant)/\(stream)", playlistURL: "/live/\(tenant)/\(stream)/master.m3u8\(token)", hlsJSURL: settings.hlsJSURL, prefer: settings.preferredPlayer, eventsURL: events))
        }
        // The tenant's stories feed, read from the control API's public feed.
        router.get("/feed/:tenant") { _, context -> Response in
            let tenant = try context.parameters.require("tenant")
            guard Slug.isValid(tenant) else { throw HTTPError(.notFound) }
            guard let api = settings.eventsBaseURL else {
                throw HTTPError(.notFound, message: "This packager serves no stories feed: start it with --events-url, the control API's base URL as players reach it.")
            }
            return html(FeedPage.html(tenant: tenant, feedURL: "\(api)/v1/feed/\(tenant)", hlsJSURL: settings.hlsJSURL))
        }
        // Everything under /live/:tenant/:stream passes the playback gate first.
        let live = router.group("live/:tenant/:stream")
        live.add(middleware: PlaybackGateMiddleware(gate: gate))
        live.add(middleware: ViewerAccountingMiddleware(viewers: viewers, trustedProxies: settings.trustedProxies))
        live.get("master.m3u8") { request, context -> Response in
            // A stream that has started but has no whole segment in every rendition yet is held
            // until it has (about one GOP after publish): a player waiting for the show to start
            // gets the playlist the moment it is ready instead of polling a 404.
            let key = try streamKey(context)
            let deadline = ContinuousClock.now + settings.blockTimeout
            while true {
                let (snapshot, version) = store.snapshot(key)
                let package = try found(snapshot, key: key, store: store)
                if package.isReady { return playlist(.init(package.multivariantPlaylist(query: tokenQuery(request), inGeneration: true)), request: request, cache: "max-age=1") }
                if package.ended { throw HTTPError(.notFound, message: "The stream ended before its first segments were ready.") }
                try await hold(store, key, after: version, until: deadline, timeout: "The stream has started but its first segments are not ready yet; retry in a second.")
            }
        }
        // The feed's preview: the latest still, replaced every few seconds of stream time.
        live.get("thumbnail.jpg") { _, context -> Response in
            guard let still = try lookup(store, context).thumbnail else {
                throw HTTPError(.notFound, message: "No preview yet: the first one comes with the first decoded frame.")
            }
            return bytes(still.jpeg, type: "image/jpeg", cache: "max-age=2")
        }
        // Renditions under the package's generation (what master.m3u8 names: media served
        // immutable), and directly under the stream (the current generation; media revalidated).
        // Hummingbird wants one parameter name per position, hence :a/:b/:c (RenditionAddress).
        for inGeneration in [true, false] {
            let directory = inGeneration ? ":a/:b" : ":a"
            live.get("\(directory)/index.m3u8") { request, context -> Response in
                // A stream in standard latency mode lists whole segments only.
                var settings = settings
                if settings.lowLatency != nil, await !gate.isLowLatency(tenant: try context.parameters.require("tenant"), stream: try context.parameters.require("stream")) {
                    settings.lowLatency = nil
                }
                return try await mediaPlaylist(store: store, settings: settings, rendered: rendered, request: request, context: context,
                                        at: try RenditionAddress(context.parameters, inGeneration: inGeneration))
            }
            let file = RouterPath("\(directory)/:\(RenditionAddress.fileParameter(inGeneration: inGeneration))")
            @Sendable func answer(_ request: Request, _ context: PackagerRequestContext) async throws -> Response {
                let address = try RenditionAddress(context.parameters, inGeneration: inGeneration)
                return try await media(store: store, settings: settings, request: request, context: context, at: address,
                                       file: try context.parameters.require(RenditionAddress.fileParameter(inGeneration: inGeneration)))
            }
            live.get(file, use: answer)
            live.head(file) { request, context in headOnly(try await answer(request, context)) }
        }
        return router
    }

    /// A HEAD's answer from its GET's: the same status and fields, no body. A part still being
    /// made is streamed without a length, so its HEAD gives none either; Hummingbird's generated
    /// HEAD (the other routes) would say `Content-Length: 0` there.
    static func headOnly(_ response: Response) -> Response {
        guard response.headers[.contentLength] == nil else { return response.createHeadResponse() }
        return Response(status: response.status, headers: response.headers, body: ResponseBody(contentLength: nil) { writer in try await writer.finish(nil) })
    }

    /// The token the gate accepted, to carry into the URIs of a playlist ("" for public streams).
    /// Only token characters are carried (anything else could break the playlist's lines).
    static func tokenQuery(_ request: Request) -> String {
        guard let token = request.uri.queryParameters.get("token"), !token.isEmpty, token.count <= 128,
              token.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == "_") }) else { return "" }
        return "?token=\(token)"
    }

    static func query(_ request: Request) -> [String: String] {
        var out: [String: String] = [:]
        for (k, v) in request.uri.queryParameters { out[String(k)] = String(v) }
        return out
    }

    /// A media playlist, held while a blocking reload waits for the segment or part it names.
    static func mediaPlaylist(store: PackageStore, settings: OriginSettings, rendered: PlaylistRenderCache, request: Request, context: PackagerRequestContext, at address: RenditionAddress) async throws -> Response {
        let (key, name) = (try streamKey(context), address.rendition)
        var directives = DeliveryDirectives()
        if settings.lowLatency != nil {
            do { directives = try DeliveryDirectives(query: query(request)) } catch {
                badDirectives.increment()
                throw HTTPError(.badRequest, message: error.description)
            }
        }
        if directives.isBlocking { blockedRequests.increment() }
        let deadline = ContinuousClock.now + settings.blockTimeout
        while true {
            let (snapshot, version) = store.snapshot(key)
            let (package, rendition) = try found(snapshot, key: key, store: store, rendition: name, generation: address.generation)
            switch BlockingReloadDecision.decide(directives, edge: rendition.edge, partTarget: settings.lowLatency?.partTarget ?? 1) {
            case .badRequest(let message):
                badDirectives.increment()
                throw HTTPError(.badRequest, message: message)
            case .respond:
                let token = tokenQuery(request)
                let text = rendered.playlist("\(key)|\(name)|\(token)|\(directives.skip)|\(settings.lowLatency != nil)", version: version) {
                    rendition.mediaPlaylist(targetDuration: settings.targetDuration, lowLatency: settings.lowLatency, query: token, skip: directives.skip,
                                            reports: package.renditionReports(besides: name, query: token), dateRanges: package.highlights)
                }
                let cache = rendition.ended ? "max-age=60" : directives.isBlocking ? "no-store" : "no-cache"
                return playlist(text, request: request, cache: cache)
            case .hold:
                try await hold(store, key, after: version, until: deadline,
                               timeout: "Segment \(directives.mediaSequence ?? 0) part \(directives.part.map(String.init) ?? "-") did not arrive within \(Int(settings.targetDuration * 3)) s; the publisher may have stalled. Reload the playlist without directives.")
            }
        }
    }

    /// An init segment, a segment or a part. The part the origin writes next (the preload hint)
    /// is held until its first CMAF chunk exists, then streamed chunk by chunk as they are written.
    static func media(store: PackageStore, settings: OriginSettings, request: Request, context: PackagerRequestContext, at address: RenditionAddress, file: String) async throws -> Response {
        let (key, name) = (try streamKey(context), address.rendition)
        guard let resource = PlaylistURIs.resource(file) else {
            throw HTTPError(.badRequest, message: "Media names look like init.mp4, init-<version>.mp4, seg-<msn>.m4s or part-<msn>.<part>.m4s, numbers in decimal without a sign or leading zeros; use the names the media playlist lists.")
        }
        let deadline = ContinuousClock.now + settings.blockTimeout
        while true {
            let (snapshot, version) = store.snapshot(key)
            let (package, rendition) = try found(snapshot, key: key, store: store, rendition: name, generation: address.generation)
            // The ETag names the stream, its generation, the rendition and the file. Immutable
            // under the generation's directory; revalidated directly under the stream, where the
            // same name is reused by the next generation.
            let etag = mediaETag(rendition: name, package: package, file: file)
            let cache = address.generation != nil ? immutableMedia : "no-cache"
            let media = { (data: [UInt8], type: String) in
                notModified(request, etag: etag, cache: cache) ?? bytes(data, type: type, cache: cache, etag: etag)
            }
            switch resource {
            case .initSegment(let version):
                guard let data = rendition.initSegment(version: version) else {
                    throw HTTPError(.notFound, message: "Init segment version \(version) is no longer listed; reload the playlist.")
                }
                return media(data, "video/mp4")
            case .segment(let n):
                if let segment = rendition.segment(n) { return media(segment.bytes, segmentType) }
                guard let dvr = settings.dvr, rendition.archivedSegment(n) != nil else {
                    throw HTTPError(.notFound, message: "Segment \(n) is not in the live window.")
                }
                guard let data = await dvr.read(key, rendition: name, sequence: n) else {
                    throw HTTPError(.serviceUnavailable, message: "Segment \(n) of the DVR window cannot be read from disk; see the packager's log.")
                }
                return media(data, segmentType)
            case .part(let m, let i):
                if let data = rendition.part(m, i) { return media(data, segmentType) }
                let decision = BlockingReloadDecision.decide(DeliveryDirectives(mediaSequence: m, part: i), edge: rendition.edge, partTarget: settings.lowLatency?.partTarget ?? 1)
                guard decision == .hold, settings.lowLatency != nil else {
                    throw HTTPError(.notFound, message: "Part \(m).\(i) is not in the live window.")
                }
                if let open = rendition.partInProgress, open.sequence == m, open.index == i {
                    return Response(status: .ok, headers: fields(type: segmentType, cache: cache, etag: etag), body: ResponseBody { writer in
                        try await streamPart(m, i, of: name, key: key, store: store, stall: settings.blockTimeout, to: &writer)
                    })
                }
                try await hold(store, key, after: version, until: deadline, chunks: true, timeout: "Part \(m).\(i) did not arrive in time; the publisher may have stalled.")
            }
        }
    }

    /// Writes a part's chunks as the packaging thread adds them, until the part is complete. The
    /// status line is out already, so a part that stops coming ends the connection instead; the
    /// wait for the next chunk starts over with every chunk written.
    private static func streamPart(_ m: Int, _ i: Int, of name: String, key: String, store: PackageStore, stall: Duration, to writer: inout any ResponseBodyWriter) async throws {
        var sent = 0
        var deadline = ContinuousClock.now + stall
        while true {
            let (package, version) = store.snapshot(key)
            guard let rendition = package?.renditions[name] else { throw StreamedPartError.gone }
            if let whole = rendition.part(m, i) {
                if whole.count > sent { try await writer.write(ByteBuffer(bytes: whole[sent...])) }
                try await writer.finish(nil)
                return
            }
            guard let open = rendition.partInProgress, open.sequence == m, open.index == i else { throw StreamedPartError.gone }
            if open.bytes.count > sent {
                try await writer.write(ByteBuffer(bytes: open.bytes[sent...]))
                sent = open.bytes.count
                deadline = ContinuousClock.now + stall
            }
            let left = deadline - ContinuousClock.now
            guard left > .zero else {
                blockTimeouts.increment()
                throw StreamedPartError.stalled
            }
            await store.waitForChange(key, after: version, timeout: left, chunks: true)
        }
    }

    enum StreamedPartError: Error {
        case gone, stalled
    }

    /// Waits for the stream to change, or throws 503 with `timeout` once `deadline` has passed.
    private static func hold(_ store: PackageStore, _ key: String, after version: UInt64, until deadline: ContinuousClock.Instant, chunks: Bool = false, timeout: @autoclosure () -> String) async throws {
        let left = deadline - ContinuousClock.now
        guard left > .zero else {
            blockTimeouts.increment()
            throw HTTPError(.serviceUnavailable, message: timeout())
        }
        await store.waitForChange(key, after: version, timeout: left, chunks: chunks)
    }

    private static func streamKey(_ context: PackagerRequestContext) throws -> String {
        PackageStore.key(tenant: try context.parameters.require("tenant"), stream: try context.parameters.require("stream"))
    }

    private static func found(_ package: StreamPackage?, key: String, store: PackageStore) throws -> StreamPackage {
        guard let package else {
            if store.isResuming(key) {
                // Retried by players (hls.js retries a 5xx, not a 404), never cached.
                throw HTTPError(.serviceUnavailable, headers: [.retryAfter: "1", .cacheControl: "no-store"],
                                message: "This packager restarted and is taking \(key) up again; retry in a second.")
            }
            throw HTTPError(.notFound, message: "No stream \(key) on this packager. Is the publisher live?")
        }
        return package
    }

    private static func found(_ package: StreamPackage?, key: String, store: PackageStore, rendition name: String, generation: String? = nil) throws -> (StreamPackage, RenditionPackage) {
        let package = try found(package, key: key, store: store)
        if let generation, generation != package.generation {
            throw HTTPError(.notFound, message: "\(key) was packaged afresh since this URL was written (generation \(generation) is gone, \(package.generation) is live); reload master.m3u8.")
        }
        guard let rendition = package.renditions[name] else {
            throw HTTPError(.notFound, message: "No rendition \(name); see master.m3u8 for the list.")
        }
        return (package, rendition)
    }

    private static func lookup(_ store: PackageStore, _ context: PackagerRequestContext) throws -> StreamPackage {
        let key = try streamKey(context)
        return try found(store.package(key), key: key, store: store)
    }

    private static func html(_ text: String) -> Response {
        bytes(Array(text.utf8), type: "text/html; charset=utf-8", cache: "no-cache")
    }

    /// A playlist with a content ETag, in gzip when the client accepts it (``PlaylistEncoding``);
    /// a matching If-None-Match gets 304 and no body. `Vary: Accept-Encoding` tells caches (a CDN)
    /// to keep the two apart.
    private static func playlist(_ rendered: PlaylistRenderCache.Rendered, request: Request, cache: String) -> Response {
        let gzipped = AcceptEncoding.acceptsGzip(request.headers[.acceptEncoding]) ? rendered.gzipped : nil
        let (body, etag) = gzipped ?? (rendered.bytes, rendered.etag)
        var answer = notModified(request, etag: etag, cache: cache)
            ?? bytes(body, headers: fields(type: playlistType, cache: cache, etag: etag))
        answer.headers[.vary] = "Accept-Encoding"
        if gzipped != nil, answer.status == .ok { answer.headers[.contentEncoding] = "gzip" }
        return answer
    }

    /// Whether an If-None-Match field names `etag` (a list of tags, comma-separated, or `*`), by
    /// the weak comparison RFC 9110 13.1.2 asks for: a cache or CDN that changed the answer (a
    /// CDN recompressing) hands on the tag as `W/"…"`, which still names this version.
    static func matches(ifNoneMatch field: String?, etag: String) -> Bool {
        guard let field else { return false }
        let opaque = { (tag: Substring) in tag.hasPrefix("W/") ? tag.dropFirst(2) : tag }
        let wanted = opaque(Substring(etag))
        return field.split(separator: ",").contains { item in
            let tag = item.trimmingCharacters(in: .whitespaces)
            return tag == "*" || opaque(Substring(tag)) == wanted
        }
    }

    /// 304 when the request's If-None-Match names `etag`.
    private static func notModified(_ request: Request, etag: String, cache: String) -> Response? {
        guard matches(ifNoneMatch: request.headers[.ifNoneMatch], etag: etag) else { return nil }
        var headers = HTTPFields()
        headers[.eTag] = etag
        headers[.cacheControl] = cache
        return Response(status: .notModified, headers: headers)
    }

    private static func bytes(_ data: [UInt8], type: String, cache: String, etag: String? = nil) -> Response {
        bytes(data, headers: fields(type: type, cache: cache, etag: etag))
    }

    private static func fields(type: String, cache: String, etag: String?) -> HTTPFields {
        var headers = HTTPFields()
        headers[.contentType] = type
        headers[.cacheControl] = cache
        if let etag { headers[.eTag] = etag }
        return headers
    }

    private static func bytes(_ data: [UInt8], headers: HTTPFields) -> Response {
        var headers = headers
        headers[.contentLength] = String(data.count)
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    /// Content type of segments and parts.
    static let segmentType = "video/iso.segment"
    /// Cache-Control of media under a generation's directory: its bytes never change.
    static let immutableMedia = "max-age=31536000, immutable"

    /// A media file's entity tag: the stream, its generation, the rendition and the file.
    static func mediaETag(rendition: String, package: StreamPackage, file: String) -> String {
        mediaETag(rendition: rendition, streamID: package.streamID, generation: package.generation, file: file)
    }

    static func mediaETag(rendition: String, streamID: Int64, generation: String, file: String) -> String {
        "\"\(rendition)-\(streamID)-\(generation)-\(file)\""
    }
}

/// Runs the playback gate for the stream named in the path before any handler under /live.
struct PlaybackGateMiddleware: RouterMiddleware {
    typealias Context = PackagerRequestContext
    let gate: PlaybackGate

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let tenant = try context.parameters.require("tenant"), stream = try context.parameters.require("stream")
        try await gate.authorize(tenant: tenant, stream: stream, token: request.uri.queryParameters.get("token"))
        return try await next(request, context)
    }
}

/// Where a request found a rendition: under a generation's directory (what master.m3u8 names),
/// or directly under the stream (`generation` nil: whatever generation is live).
struct RenditionAddress {
    var generation: String?
    var rendition: String

    /// From the route's parameters: `:a/:b/:c` (generation, rendition, file) or `:a/:b`
    /// (rendition, file).
    init(_ parameters: Parameters, inGeneration: Bool) throws {
        generation = inGeneration ? try parameters.require("a") : nil
        rendition = try parameters.require(inGeneration ? "b" : "a")
    }

    /// The parameter that names the file.
    static func fileParameter(inGeneration: Bool) -> String { inGeneration ? "c" : "b" }
}

/// Counts the viewer session and the bytes of every answer under /live.
struct ViewerAccountingMiddleware: RouterMiddleware {
    typealias Context = PackagerRequestContext
    let viewers: ViewerAccounting
    let trustedProxies: Set<String>

    static let playbackSessionID = HTTPField.Name("X-Playback-Session-Id")!
    static let forwardedFor = HTTPField.Name("X-Forwarded-For")!

    /// The viewer session a request counts for (``ViewerAccounting/session(playbackSessionID:address:userAgent:)``).
    static func session(_ headers: HTTPFields, peer: String?, trustedProxies: Set<String>) -> String {
        session(playbackSessionID: headers[playbackSessionID], forwardedFor: headers[forwardedFor], userAgent: headers[.userAgent], peer: peer, trustedProxies: trustedProxies)
    }

    /// The same from the three fields it reads, as the wire-level hot path has them.
    static func session(playbackSessionID: String?, forwardedFor: String?, userAgent: String?, peer: String?, trustedProxies: Set<String>) -> String {
        ViewerAccounting.session(
            playbackSessionID: playbackSessionID,
            address: ClientAddress.resolve(peer: peer, forwardedFor: forwardedFor, trustedProxies: trustedProxies),
            userAgent: userAgent)
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let response = try await next(request, context)
        // A HEAD (a probe, a CDN's check) carries no media: it is nobody watching.
        guard request.method != .head else { return response }
        let session = Self.session(request.headers, peer: context.remoteAddress?.ipAddress, trustedProxies: trustedProxies)
        let tenant = try context.parameters.require("tenant"), stream = try context.parameters.require("stream")
        let key = PackageStore.key(tenant: tenant, stream: stream)
        guard let length = response.headers[.contentLength].flatMap({ Int($0) }) else {
            // Streamed (a preload-hinted part): counted as its chunks go out.
            let egress = viewers.served(stream: key, session: session, bytes: 0)
            var response = response
            response.body = response.body.map { buffer in
                egress.increment(by: buffer.readableBytes)
                return buffer
            }
            return response
        }
        viewers.served(stream: key, session: session, bytes: length)
        return response
    }
}

/// The packager's request context: Hummingbird's basics plus the client's address.
struct PackagerRequestContext: RequestContext, RemoteAddressRequestContext {
    var coreContext: CoreRequestContextStorage
    let remoteAddress: SocketAddress?

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }
}

/// Strong entity tags from content: FNV-1a 64 of the body, quoted.
enum ETag {
    static func of(_ data: [UInt8]) -> String {
        let hex = String(FNV1a.hash(data), radix: 16)
        return "\"" + String(repeating: "0", count: 16 - hex.count) + hex + "\""
    }
}
