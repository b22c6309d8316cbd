import ConnectionBudget
import NIOCore

/// The origin's hot path on the wire of a plain HTTP/1.1 connection (issue 18): it reads the
/// connection's bytes before Hummingbird's parser does, and answers a plain GET of media that
/// ``MediaFastPath/Origin`` can answer by writing the answer's bytes itself. No HTTP parser,
/// header conversion, response encoder or task runs for those requests, which are what players
/// and a CDN ask for most.
///
/// Every other request goes on to the server whole (``HTTP1RequestHead`` finds where it ends),
/// so the server's parser reads each request from its first byte. While a request handed on is
/// unanswered, the requests behind it are handed on too, so answers keep the order of requests
/// (HTTP/1.1 pipelining). Bytes ``HTTP1RequestHead`` does not follow go to the server from there
/// on, which then reads and answers them as before (``MediaFastPath``, behind the router's
/// connection-state handler, still answers media on such a connection). Once the server drains,
/// everything goes to it.
///
/// A client that sends requests and does not read the answers gets no more answers while the
/// connection cannot take more bytes (NIO's write buffer is over its high-water mark), and no
/// more of its bytes are read until it can: the packager holds at most about one read's worth of
/// its requests and the socket's buffers of its answers, as for the router's answers.
final class HTTP1MediaFastPath: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let origin: MediaFastPath.Origin
    private let activity: ConnectionActivity
    private let unchanging: [UInt8]
    private let maximumHeadBytes: Int
    private let maximumFields: Int
    /// Bytes read and not yet answered or handed on (a request head not yet whole).
    private var input: ByteBuffer?
    /// Body bytes of a request handed on that are still to come.
    private var bodyToHandOn = 0
    /// False once the input holds bytes ``HTTP1RequestHead`` does not follow.
    private var following = true
    /// Answers wait for the connection to become writable; reads wait with them.
    private var waitingToWrite = false
    /// A read the server asked for while answers waited.
    private var readHeld = false
    private var peer = PeerAddress()

    init(origin: MediaFastPath.Origin, activity: ConnectionActivity, unchanging: [UInt8], maximumHeadBytes: Int, maximumFields: Int) {
        self.origin = origin
        self.activity = activity
        self.unchanging = unchanging
        self.maximumHeadBytes = maximumHeadBytes
        self.maximumFields = maximumFields
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard following else { return context.fireChannelRead(data) }
        var bytes = unwrapInboundIn(data)
        if var held = input {
            input = nil
            held.writeBuffer(&bytes)
            bytes = held
        }
        if waitingToWrite {  // what was read before the reads stopped
            input = bytes
            return
        }
        process(context, bytes)
    }

    /// Answers or hands on each whole request at the front of `received`, in order; keeps the
    /// rest (a head not yet whole, or everything from a request that waits to be answered).
    private func process(_ context: ChannelHandlerContext, _ received: ByteBuffer) {
        var bytes = received
        var answered = false
        defer { if answered { context.flush() } }
        while bytes.readableBytes > 0 {
            if bodyToHandOn > 0 {
                let n = min(bodyToHandOn, bytes.readableBytes)
                bodyToHandOn -= n
                context.fireChannelRead(wrapInboundOut(bytes.readSlice(length: n)!))
                continue
            }
            let reading = bytes.withUnsafeReadableBytes { HTTP1RequestHead.read($0, maximumHeadBytes: maximumHeadBytes, maximumFields: maximumFields) }
            switch reading {
            case .incomplete:
                self.input = bytes
                bytes = ByteBuffer()
            case .unfollowable:
                following = false
                context.fireChannelRead(wrapInboundOut(bytes))
                bytes = ByteBuffer()
            case .other(let length, let body):
                bodyToHandOn = body
                context.fireChannelRead(wrapInboundOut(bytes.readSlice(length: length)!))
            case .plainGet(let head):
                guard context.channel.isWritable else {
                    waitingToWrite = true
                    self.input = bytes
                    return
                }
                guard activity.mayAnswerOnTheWire, let answer = answer(head, peer: peer.of(context.channel)) else {
                    context.fireChannelRead(wrapInboundOut(bytes.readSlice(length: head.length)!))
                    continue
                }
                bytes.moveReaderIndex(forwardBy: head.length)
                var out = context.channel.allocator.buffer(capacity: unchanging.count + 256 + (answer.notModified ? 0 : answer.body.count))
                answer.write(into: &out, unchanging: unchanging)
                context.write(wrapOutboundOut(out), promise: nil)
                activity.answeredOnTheWire()
                MediaFastPath.answered.increment()
                answered = true
            }
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if waitingToWrite, context.channel.isWritable {
            waitingToWrite = false
            if let held = input {
                input = nil
                process(context, held)
            }
            if !waitingToWrite, readHeld {
                readHeld = false
                context.read()
            }
        }
        context.fireChannelWritabilityChanged()
    }

    func read(context: ChannelHandlerContext) {
        if waitingToWrite {
            readHeld = true
        } else {
            context.read()
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent { activity.drain() }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        input = nil
        context.fireChannelInactive()
    }

    private func answer(_ head: HTTP1RequestHead, peer: String?) -> MediaAnswer? {
        origin.answer(path: head.target, ifNoneMatch: head.ifNoneMatch) {
            ViewerAccountingMiddleware.session(playbackSessionID: head.playbackSessionID, forwardedFor: head.forwardedFor, userAgent: head.userAgent,
                                               peer: peer, trustedProxies: origin.trustedProxies)
        }
    }
}
