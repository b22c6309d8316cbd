import HTTPTypes
import Hummingbird

/// CORS for a public origin behind caches: the same headers on every answer, whatever the
/// request carried. Media are served `immutable` for a year, so an answer fetched without an
/// `Origin` header (the browser's native player, a link preview, a CDN's own fetch, the feed's
/// preload) is reused for a later cross-origin request; had it no `Access-Control-Allow-Origin`,
/// hls.js would fail with `fragLoadError` and never play. Answers never depend on `Origin`, so
/// no `Vary: Origin` is needed and one cached copy serves every page. Hummingbird's
/// `CORSMiddleware` answers only requests that carry `Origin`, which is the bug this replaces.
struct PublicCORSMiddleware<Context: RequestContext>: RouterMiddleware {
    /// What a preflight (`OPTIONS`) is answered with: any origin, the methods and request headers
    /// a player sends, cached by the browser for a day.
    static var preflightHeaders: HTTPFields {
        var h = PublicCORS.headers
        h[.accessControlAllowMethods] = "GET, HEAD, OPTIONS"
        h[.accessControlAllowHeaders] = "Content-Type, Range, If-None-Match"
        h[.accessControlMaxAge] = "86400"
        return h
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if request.method == .options { return Response(status: .noContent, headers: Self.preflightHeaders) }
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as any HTTPResponseError {
            // Errors too: a cached 404 without the header would read as a network failure.
            response = try error.response(from: request, context: context)
        }
        for field in PublicCORS.headers { response.headers[field.name] = field.value }
        response.headers.markVaryingFieldsNotIndexed()
        return response
    }
}

/// What every answer (errors included) carries, from ``PublicCORSMiddleware`` and the origin's
/// hot path (``MediaFastPath``) alike; made once, as a generic type cannot store it.
/// `Timing-Allow-Origin` lets a page on another origin read its requests' timings and protocol
/// (Resource Timing), as a player's analytics do, and as the HTTP/2 test reads `nextHopProtocol`.
enum PublicCORS {
    static let headers: HTTPFields = [.accessControlAllowOrigin: "*", .accessControlExposeHeaders: "ETag, Content-Length, Date", HTTPField.Name("Timing-Allow-Origin")!: "*"]
}
