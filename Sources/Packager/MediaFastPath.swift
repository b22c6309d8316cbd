import Foundation
import HTTPTypes
import Metrics
import NIOCore
import NIOHTTPTypes
import Synchronization

/// The hot path of the origin's listeners, below Hummingbird's router (issue 18): a part,
/// segment or init segment of a public stream, already in memory, asked for under its
/// generation's directory (what master.m3u8 names) without a query, is answered right here on
/// the connection's event loop, with the same bytes and headers the router would give, with no
/// task, router or middleware in between. Everything else (playlists, blocking requests, media
/// not out yet, private streams, DVR reads, HEAD) goes on to Hummingbird unchanged.
///
/// On an HTTP/1.1 connection it sits behind Hummingbird's connection-state handler, so keep-alive
/// and the idle deadline see every request and answer. On the plain listener, most media is
/// answered before this, on the wire (``HTTP1MediaFastPath``); this answers what that one hands on
/// (a request behind an unanswered one, `Connection: close`, HTTP/1.0, or any request once the wire
/// reader stopped following the connection's bytes). Answers keep the order of requests: while
/// one handed on is unanswered, the next is handed on too (HTTP/1.1 pipelining). A request is
/// answered once it has ended, as the router would. HTTP/2 (the TLS listener) has its own, at the
/// frame level (``HTTP2MediaFrames``), by the same rule (``Origin/answer(path:ifNoneMatch:session:)``).
final class MediaFastPath: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    /// What the answers need from the packager; one per listener.
    struct Origin: Sendable {
        let store: PackageStore
        let gate: PlaybackGate
        let viewers: ViewerAccounting
        let trustedProxies: Set<String>
        let serverName: String
    }

    static let answered = Counter(label: "storecast_packager_fast_path_answers_total")

    private let origin: Origin
    /// Requests handed on whose answers have not ended.
    private var handedOn = 0
    /// The current request is answered here: what to send once it has ended (its body, if
    /// any, is dropped meanwhile).
    private var pending: (response: HTTPResponse, body: ByteBuffer?)?

    init(origin: Origin) {
        self.origin = origin
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        switch part {
        case .head(let request):
            // Not while the connection cannot take more bytes (a client that sends requests and
            // reads nothing): the router's answers wait for it, so the request is handed on.
            if handedOn == 0, context.channel.isWritable, let answer = answer(request, remote: context.channel.remoteAddress) {
                pending = answer
                return
            }
            handedOn += 1
            context.fireChannelRead(data)
        case .body:
            if pending == nil { context.fireChannelRead(data) }
        case .end:
            guard let (response, body) = pending else { return context.fireChannelRead(data) }
            pending = nil
            context.write(wrapOutboundOut(.head(response)), promise: nil)
            if let body { context.write(wrapOutboundOut(.body(body)), promise: nil) }
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            Self.answered.increment()
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { handedOn = max(0, handedOn - 1) }
        context.write(data, promise: promise)
    }

    /// The answer to `request` when it can be given here and now; nil hands it on.
    private func answer(_ request: HTTPRequest, remote: SocketAddress?) -> (HTTPResponse, ByteBuffer?)? {
        guard request.method == .get, let path = request.path else { return nil }
        let fields = request.headerFields
        guard let answer = origin.answer(path: path, ifNoneMatch: fields[.ifNoneMatch], session: {
            ViewerAccountingMiddleware.session(fields, peer: remote?.ipAddress, trustedProxies: origin.trustedProxies)
        }) else { return nil }
        return (answer.response(serverName: origin.serverName), answer.notModified ? nil : ByteBuffer(bytes: answer.body))
    }
}

extension MediaFastPath.Origin {
    /// The answer to a GET of `path` when it can be given without the router (media of a public
    /// stream, in memory, under its generation's directory), counted for the viewer `session`
    /// names; nil when it is the router's to give.
    func answer(path: String, ifNoneMatch: String?, session: () -> String) -> MediaAnswer? {
        guard let address = MediaPath(path) else { return nil }
        let key = PackageStore.key(tenant: address.tenant, stream: address.stream)
        guard gate.admitsWithoutToken(key: key) else { return nil }
        guard let resource = PlaylistURIs.resource(address.file),
              let (data, streamID) = store.media(key, generation: address.generation, rendition: address.rendition, resource) else { return nil }
        let type = if case .initSegment = resource { "video/mp4" } else { PackagerHTTP.segmentType }
        let etag = PackagerHTTP.mediaETag(rendition: address.rendition, streamID: streamID, generation: address.generation, file: address.file)
        let notModified = PackagerHTTP.matches(ifNoneMatch: ifNoneMatch, etag: etag)
        viewers.served(stream: key, session: session(), bytes: notModified ? 0 : data.count)
        return MediaAnswer(notModified: notModified, etag: etag, contentType: type, body: data)
    }
}

/// What the hot path answers to a GET of media: the router's answer to the same URL (200 with the
/// bytes, or 304 on a matching ETag), made into an `HTTPResponse` (``MediaFastPath``) or written as
/// HTTP/1.1 bytes (``HTTP1MediaFastPath``); `MediaFastPathTests` holds both to the router's.
struct MediaAnswer {
    let notModified: Bool
    let etag: String
    let contentType: String
    let body: ArraySlice<UInt8>

    func response(serverName: String) -> HTTPResponse {
        var fields = Self.unchangingFields(serverName: serverName)
        fields[.eTag] = etag
        fields[.date] = HTTPDate.now()
        if !notModified {
            fields[.contentType] = contentType
            fields[.contentLength] = String(body.count)
        }
        // As the router's answers (PublicCORSMiddleware; HTTP2MediaFrames too): over HTTP/2, ETag
        // and length indexed would fill the connection's HPACK table and slow every answer.
        fields.markVaryingFieldsNotIndexed()
        return HTTPResponse(status: notModified ? .notModified : .ok, headerFields: fields)
    }

    /// The same answer as HTTP/1.1 bytes: status line, the fields of ``response(serverName:)``
    /// (`unchanging`: those that are the same in every answer, made once), then the body.
    func write(into buffer: inout ByteBuffer, unchanging: [UInt8]) {
        buffer.writeStaticString(notModified ? "HTTP/1.1 304 Not Modified\r\n" : "HTTP/1.1 200 OK\r\n")
        buffer.writeBytes(unchanging)
        buffer.writeStaticString("ETag: ")
        buffer.writeString(etag)
        buffer.writeStaticString("\r\nDate: ")
        buffer.writeString(HTTPDate.now())
        if notModified {
            buffer.writeStaticString("\r\n\r\n")
            return
        }
        buffer.writeStaticString("\r\nContent-Type: ")
        buffer.writeString(contentType)
        buffer.writeStaticString("\r\nContent-Length: ")
        buffer.writeString(String(body.count))
        buffer.writeStaticString("\r\n\r\n")
        buffer.writeBytes(body)
    }

    /// The fields every answer has: the public CORS fields, the media's caching and the
    /// server's name (made once per listener by the HTTP/1.1 and HTTP/2 writers).
    static func unchangingFields(serverName: String) -> HTTPFields {
        var fields = PublicCORS.headers
        fields[.cacheControl] = PackagerHTTP.immutableMedia
        fields[.server] = serverName
        return fields
    }

    /// ``unchangingFields(serverName:)`` as HTTP/1.1 lines.
    static func unchangingLines(serverName: String) -> [UInt8] {
        Array(unchangingFields(serverName: serverName).map { "\($0.name.rawName): \($0.value)\r\n" }.joined().utf8)
    }
}

/// The Date field of answers, as HTTP writes it (RFC 9110 5.6.7), made once a second.
enum HTTPDate {
    private static let cached = Mutex<(second: Int, text: String)>((-1, ""))

    static func now() -> String {
        let seconds = Int(Date().timeIntervalSince1970)
        return cached.withLock { c in
            if c.second != seconds { c = (seconds, format(seconds)) }
            return c.text
        }
    }

    static func format(_ seconds: Int) -> String {
        var t = time_t(seconds), parts = tm()
        gmtime_r(&t, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"], months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) \(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }
}
