// The ceiling of HTTP/2 over TLS on the libraries the packager is built on (swift-nio,
// swift-nio-ssl, swift-nio-http2), with nothing of Storecast's or Hummingbird's: a server that
// answers every request with one body from memory (bench/serving.sh measures it beside the
// packager and nginx, issue 18). Not a server to run: it reads no path and checks nothing.
//   frames       NIOHTTP2Handler with no stream multiplexer: requests answered as frames on the
//                connection's own pipeline (no channel per stream), the least a server on
//                swift-nio-http2 can do per request.
//   multiplexer  NIO's usual HTTP/2 server: a child channel per stream (the inline multiplexer)
//                with the HTTP/1-style codec, as Hummingbird's HTTP/2 listener has, without its
//                per-stream task.
// Usage: h2ceiling PORT CERT.pem KEY.pem BODYFILE (frames|multiplexer) [THREADS]
import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL

func fail(_ msg: String) -> Never {
    FileHandle.standardError.write((msg + "\n").data(using: .utf8)!)
    exit(2)
}

let args = CommandLine.arguments
guard args.count >= 6 else {
    fail("usage: h2ceiling PORT CERT.pem KEY.pem BODYFILE (frames|multiplexer) [THREADS]")
}
guard let port = Int(args[1]) else { fail("bad port: \(args[1])") }
let certPath = args[2]
let keyPath = args[3]
let bodyPath = args[4]
let mode = args[5]
guard mode == "frames" || mode == "multiplexer" else { fail("mode must be frames or multiplexer") }
let threads = args.count > 6 ? (Int(args[6]) ?? 0) : System.coreCount
guard threads > 0 else { fail("bad thread count") }

guard let bodyData = FileManager.default.contents(atPath: bodyPath) else { fail("cannot read \(bodyPath)") }
let body = ByteBuffer(bytes: bodyData)
let cacheControl = "public, max-age=60"

// TLS: ALPN offers h2 only.
let sslContext: NIOSSLContext
do {
    let certs = try NIOSSLCertificate.fromPEMFile(certPath).map { NIOSSLCertificateSource.certificate($0) }
    let key = try NIOSSLPrivateKey(file: keyPath, format: .pem)
    var tls = TLSConfiguration.makeServerConfiguration(certificateChain: certs, privateKey: .privateKey(key))
    tls.applicationProtocols = ["h2"]
    sslContext = try NIOSSLContext(configuration: tls)
} catch {
    fail("TLS setup failed: \(error)")
}

// MARK: mode "frames": NIOHTTP2Handler without multiplexer, raw HTTP2Frame in/out.

final class FrameResponder: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private let body: ByteBuffer
    private let responseHeaders: HPACKHeaders
    private var pendingFlush = false

    init(body: ByteBuffer, cacheControl: String) {
        self.body = body
        self.responseHeaders = HPACKHeaders([
            (":status", "200"),
            ("content-type", "video/mp4"),
            ("content-length", String(body.readableBytes)),
            ("cache-control", cacheControl),
        ])
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = self.unwrapInboundIn(data)
        guard frame.streamID != .rootStream else { return }
        switch frame.payload {
        case .headers(let h) where h.endStream:
            self.respond(context: context, streamID: frame.streamID)
        case .data(let d) where d.endStream:
            // Request with a body: answer once the body has ended.
            self.respond(context: context, streamID: frame.streamID)
        default:
            break  // drop everything else
        }
    }

    private func respond(context: ChannelHandlerContext, streamID: HTTP2StreamID) {
        let headers = HTTP2Frame(
            streamID: streamID,
            payload: .headers(.init(headers: self.responseHeaders, endStream: false))
        )
        let data = HTTP2Frame(
            streamID: streamID,
            payload: .data(.init(data: .byteBuffer(self.body), endStream: true))
        )
        context.write(self.wrapOutboundOut(headers), promise: nil)
        context.write(self.wrapOutboundOut(data), promise: nil)
        self.pendingFlush = true
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if self.pendingFlush {
            self.pendingFlush = false
            context.flush()
        }
        context.fireChannelReadComplete()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        context.close(promise: nil)
    }
}

// MARK: mode "multiplexer": inline stream multiplexer + HTTP/1 codec per stream.

final class StreamResponder: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let body: ByteBuffer
    private let head: HTTPResponseHead

    init(body: ByteBuffer, cacheControl: String) {
        self.body = body
        self.head = HTTPResponseHead(
            version: .http2,
            status: .ok,
            headers: [
                "content-type": "video/mp4",
                "content-length": String(body.readableBytes),
                "cache-control": cacheControl,
            ]
        )
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .end = self.unwrapInboundIn(data) else { return }
        context.write(self.wrapOutboundOut(.head(self.head)), promise: nil)
        context.write(self.wrapOutboundOut(.body(.byteBuffer(self.body))), promise: nil)
        context.writeAndFlush(self.wrapOutboundOut(.end(nil)), promise: nil)
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        context.close(promise: nil)
    }
}

// MARK: server

let group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
let useFrames = (mode == "frames")

let bootstrap = ServerBootstrap(group: group)
    .serverChannelOption(.backlog, value: 1024)
    .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
    .childChannelOption(.socketOption(.so_reuseaddr), value: 1)
    .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
    .childChannelOption(.maxMessagesPerRead, value: 16)
    .childChannelInitializer { channel in
        channel.eventLoop.makeCompletedFuture {
            let sync = channel.pipeline.syncOperations
            try sync.addHandler(NIOSSLServerHandler(context: sslContext))
            if useFrames {
                // Plain (non-inline) init: HTTP2Frame values flow to the next handler.
                try sync.addHandler(NIOHTTP2Handler(mode: .server))
                try sync.addHandler(FrameResponder(body: body, cacheControl: cacheControl))
            } else {
                // Inline multiplexer (the connectionConfiguration/streamConfiguration overload).
                _ = try sync.configureHTTP2Pipeline(
                    mode: .server,
                    connectionConfiguration: .init(),
                    streamConfiguration: .init()
                ) { stream in
                    stream.eventLoop.makeCompletedFuture {
                        let s = stream.pipeline.syncOperations
                        try s.addHandler(HTTP2FramePayloadToHTTP1ServerCodec())
                        try s.addHandler(StreamResponder(body: body, cacheControl: cacheControl))
                    }
                }
            }
        }
    }

let serverChannel: Channel
do {
    serverChannel = try bootstrap.bind(host: "127.0.0.1", port: port).wait()
} catch {
    fail("bind failed on port \(port): \(error)")
}
FileHandle.standardOutput.write(
    "h2ceiling listening on https://127.0.0.1:\(port) mode=\(mode) threads=\(threads) body=\(body.readableBytes)B\n"
        .data(using: .utf8)!)
try serverChannel.closeFuture.wait()
