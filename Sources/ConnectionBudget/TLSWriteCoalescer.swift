import NIOCore

/// Gathers the small writes an HTTP/2 connection makes between two flushes into one buffer of up
/// to ``recordBytes`` before they reach TLS. NIO's HTTP/2 handler writes every frame on its own,
/// and a DATA frame as two writes (its 9-byte header, then its payload), and swift-nio-ssl makes
/// each write a TLS record of its own: three records, each with its own header, tag and cipher
/// set-up, for an answer that fits in one. nginx fills records up to its `ssl_buffer_size`
/// (16 KiB) the same way. A write of a record's size or more goes on as it is, after what was
/// gathered; promises complete when the write they were gathered into does.
final class TLSWriteCoalescer: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    /// TLS's largest record (RFC 8446 5.1).
    static let recordBytes = 16 * 1024

    private var gathered: ByteBuffer?
    private var promise: EventLoopPromise<Void>?

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .byteBuffer(var bytes) = unwrapOutboundIn(data), bytes.readableBytes < Self.recordBytes else {
            passOn(context)
            context.write(data, promise: promise)
            return
        }
        if gathered == nil { gathered = context.channel.allocator.buffer(capacity: Self.recordBytes) }
        gathered!.writeBuffer(&bytes)
        if let promise {
            if let gatheredPromise = self.promise { gatheredPromise.futureResult.cascade(to: promise) } else { self.promise = promise }
        }
        if gathered!.readableBytes >= Self.recordBytes { passOn(context) }
    }

    func flush(context: ChannelHandlerContext) {
        passOn(context)
        context.flush()
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        passOn(context)
        context.close(mode: mode, promise: promise)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        passOn(context)
    }

    private func passOn(_ context: ChannelHandlerContext) {
        guard let bytes = gathered else { return }
        let promise = self.promise
        (gathered, self.promise) = (nil, nil)
        context.write(wrapOutboundOut(.byteBuffer(bytes)), promise: promise)
    }
}
