import Metrics
import NIOCore
import NIOHPACK
import NIOHTTP2

/// The hot path of the HTTPS listener's HTTP/2 connections, at the frame level (issue 18): a GET
/// of media in memory (what ``MediaFastPath`` answers, by the same rule) that arrives as one
/// HEADERS frame ending its stream is answered right here, a HEADERS frame and a DATA frame on
/// the connection's own pipeline, with no channel, codec or task made for the stream. Every
/// other frame goes on to the stream multiplexer and from there to Hummingbird's router, as
/// before: playlists, blocking requests, media not out yet, private streams, HEAD, a request
/// with a body. NIO's HTTP/2 handler in front of this keeps the protocol: flow control (it holds
/// what a stream's window cannot take yet), the stream limits and the resets.
///
/// A stream answered here is the handler's until it closes: the client's later frames on it
/// (window updates, a reset) stop here, where the multiplexer, which never saw the stream, would
/// take them for a protocol error, and so do NIO's events about it (its window, its close), which
/// the multiplexer would only look up and drop.
///
/// Bytes answered here wait in NIO's HTTP/2 handler for the client's flow-control window, and a
/// client may open none (an initial window of 0) and keep asking. So at most ``unsentBudget``
/// bytes of answers are held per connection: past it, and while the connection cannot take more
/// bytes (a client that asks and never reads), requests go on to the router, whose answers wait
/// for the stream's window in its task. An answer is held until its stream closes, which NIO's
/// handler announces when the answer's last frame has passed its flow control (which it lets
/// through only while the connection is writable); past that, the bytes wait on the socket: no
/// more is answered here while it cannot take them, and a connection that stays so for the idle
/// timeout is closed (``HTTP2ConnectionDeadlines``, for every stream). And answers held here that make
/// no progress for `stallDeadline` (the idle timeout: no window update from the client, no
/// answer let through) close the connection, as the idle timer of a stream the router answers
/// closes that stream. A slow client that reads keeps sending window updates. No write here
/// carries a promise: one per answer, cascaded by the TLS coalescer and gathered by
/// swift-nio-ssl, cost more than the close event already on its way.
final class HTTP2MediaFrames: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias InboundOut = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    /// The status and the fields every answer has (``MediaAnswer/unchangingFields(serverName:)``),
    /// made once per listener.
    struct Fields: Sendable {
        let ok: HPACKHeaders
        let notModified: HPACKHeaders

        init(serverName: String) {
            let unchanging = MediaAnswer.unchangingFields(serverName: serverName).map { ($0.name.canonicalName, $0.value) }
            ok = HPACKHeaders([(":status", "200")] + unchanging)
            notModified = HPACKHeaders([(":status", "304")] + unchanging)
        }
    }

    private let origin: MediaFastPath.Origin
    private let fields: Fields
    /// Streams answered here that have not closed yet, with their body's bytes.
    private var answered: [HTTP2StreamID: Int] = [:]
    private var flushPending = false
    /// Body bytes of the answers in ``answered``: held by NIO's handler for the client's window.
    private var unsent = 0
    static let unsentBudget = 1 << 20
    static let stalled = Counter(label: "storecast_packager_http2_stalled_connections_total")
    private let stallDeadline: TimeAmount
    /// When answers held here last moved (the client opened a window, one was let through, or
    /// the first was written).
    private var lastProgress = NIODeadline.now()
    private var stallCheck: Scheduled<Void>?
    private var peer = PeerAddress()

    init(origin: MediaFastPath.Origin, fields: Fields, stallDeadline: TimeAmount) {
        (self.origin, self.fields, self.stallDeadline) = (origin, fields, stallDeadline)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stallCheck?.cancel()
        stallCheck = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        if unsent > 0, case .windowUpdate = frame.payload { lastProgress = .now() }
        if frame.streamID != .rootStream {
            if answered[frame.streamID] != nil { return }
            if case .headers(let request) = frame.payload, request.endStream, unsent < Self.unsentBudget, context.channel.isWritable,
               let answer = answer(request.headers, peer: peer.of(context.channel)) {
                write(answer, on: frame.streamID, context: context)
                return
            }
        }
        context.fireChannelRead(data)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if flushPending {
            flushPending = false
            context.flush()
        }
        context.fireChannelReadComplete()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if !answered.isEmpty, isAboutAnAnsweredStream(event) { return }
        context.fireUserInboundEventTriggered(event)
    }

    /// Whether `event` is one of NIO's about a stream answered here (kept from the multiplexer);
    /// at the stream's close its bytes are let go. Window updates first: they are most of the events.
    private func isAboutAnAnsweredStream(_ event: Any) -> Bool {
        if let window = event as? NIOHTTP2WindowUpdatedEvent { return window.streamID != .rootStream && answered[window.streamID] != nil }
        // NIO announces a stream after its first frame was read, here already answered.
        if let created = event as? NIOHTTP2StreamCreatedEvent { return answered[created.streamID] != nil }
        guard let closed = event as? StreamClosedEvent, let size = answered.removeValue(forKey: closed.streamID) else { return false }
        unsent -= size
        // Held bytes let go are progress; it only matters while some are still held (the next
        // answer restarts the clock).
        if size > 0, unsent > 0 { lastProgress = .now() }
        return true
    }

    /// The answer to a request with these header fields when it is the hot path's; nil hands it on.
    private func answer(_ request: HPACKHeaders, peer: String?) -> MediaAnswer? {
        // One pass over the request's fields (lowercase: NIO refuses a header block with an
        // uppercase name). A field sent more than once reads as the router reads it: its values
        // joined by commas.
        var method: String?, path: String?, ifNoneMatch: String?, sessionID: String?, forwardedFor: String?, userAgent: String?
        func join(_ field: inout String?, _ value: String) { field = field.map { "\($0), \(value)" } ?? value }
        for (name, value, _) in request {
            switch name {
            case ":method": method = value
            case ":path": path = value
            case "if-none-match": join(&ifNoneMatch, value)
            case "user-agent": join(&userAgent, value)
            case Self.playbackSessionID: join(&sessionID, value)
            case Self.forwardedFor: join(&forwardedFor, value)
            default: continue
            }
        }
        guard method == "GET", let path else { return nil }
        return origin.answer(path: path, ifNoneMatch: ifNoneMatch) {
            ViewerAccountingMiddleware.session(playbackSessionID: sessionID, forwardedFor: forwardedFor, userAgent: userAgent, peer: peer, trustedProxies: origin.trustedProxies)
        }
    }

    private static let playbackSessionID = ViewerAccountingMiddleware.playbackSessionID.canonicalName
    private static let forwardedFor = ViewerAccountingMiddleware.forwardedFor.canonicalName

    /// Closes the connection once answers held here have not moved for `stallDeadline`.
    private func watchForStall(_ context: ChannelHandlerContext) {
        guard stallCheck == nil else { return }
        stallCheck = context.eventLoop.assumeIsolated().scheduleTask(deadline: lastProgress + stallDeadline) { [self] in
            stallCheck = nil
            guard unsent > 0 else { return }
            if NIODeadline.now() - lastProgress >= stallDeadline {
                Self.stalled.increment()
                context.close(promise: nil)
            } else {
                watchForStall(context)
            }
        }
    }

    private func write(_ answer: MediaAnswer, on stream: HTTP2StreamID, context: ChannelHandlerContext) {
        // As the router's answers: the fields that change with every answer are not indexed, or
        // they would fill the connection's HPACK table and slow every answer.
        var head = answer.notModified ? fields.notModified : fields.ok
        head.add(name: "etag", value: answer.etag, indexing: .nonIndexable)
        head.add(name: "date", value: HTTPDate.now())
        if !answer.notModified {
            head.add(name: "content-type", value: answer.contentType)
            head.add(name: "content-length", value: String(answer.body.count), indexing: .nonIndexable)
        }
        // Held before anything is written: NIO's handler may announce the stream's close while
        // it takes the last frame.
        let size = answer.notModified ? 0 : answer.body.count
        answered[stream] = size
        if size > 0 {
            if unsent == 0 { lastProgress = .now() }
            unsent += size
            watchForStall(context)
        }
        context.write(wrapOutboundOut(HTTP2Frame(streamID: stream, payload: .headers(.init(headers: head, endStream: answer.notModified)))), promise: nil)
        if !answer.notModified {
            let body = context.channel.allocator.buffer(bytes: answer.body)
            context.write(wrapOutboundOut(HTTP2Frame(streamID: stream, payload: .data(.init(data: .byteBuffer(body), endStream: true)))), promise: nil)
        }
        flushPending = true
        MediaFastPath.answered.increment()
    }
}
