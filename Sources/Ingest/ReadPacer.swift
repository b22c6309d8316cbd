import NIOCore

/// Read pacing: a publishing connection reads its socket at most once per `interval`, and all
/// paced connections of a loop read together, on one shared tick.
///
/// A phone or OBS writes its stream in many small TCP writes (about 70 a second at 2.5 Mbps);
/// read as they come, every write wakes the ingest loop, and the wake-up (the scheduler, `epoll`,
/// the ACK each read sends back) costs more than the bytes. Paced, the kernel buffers the
/// interval's bytes (2.5 Mbps × 100 ms is 31 KB) and one wake-up reads every connection, then
/// hands the frames to ZeroMQ in one go. The price is latency: a frame waits up to `interval`,
/// and a part's last frame also waits for the next one (measured: about 45 ms more end to end
/// at p50 at 50 ms, and 2–20 ms more than that at the default 100 ms, which takes about a
/// quarter less CPU than 50 ms; against a PART-HOLD-BACK of 1 s). Intervals shorter than
/// a publisher's gap between writes (about 13 ms at 30 fps with audio) save nothing: measured
/// in docs/benchmarks.md. SRS's merged read (`mr`) makes the same trade, at 350 ms.
///
/// One pacer per event loop; connections on another loop are not paced.
public final class ReadPacer: Sendable {
    public static let defaultMilliseconds = 100
    public static let defaultInterval: Duration = .milliseconds(defaultMilliseconds)

    let eventLoop: any EventLoop
    let interval: TimeAmount
    /// Connections whose read waits for the next tick; a tick is scheduled whenever any do.
    private let waiting: NIOLoopBoundBox<[ChannelHandlerContext]>

    public init(eventLoop: any EventLoop, interval: Duration) {
        self.eventLoop = eventLoop
        self.interval = .init(interval)
        waiting = .makeBoxSendingValue([], eventLoop: eventLoop)
    }

    /// Issues `context.read()` at the next tick (scheduled now if none is).
    func readAtNextTick(_ context: ChannelHandlerContext) {
        waiting.value.append(context)
        guard waiting.value.count == 1 else { return }  // the tick is scheduled already
        eventLoop.assumeIsolated().scheduleTask(in: interval) { [self] in tick() }
    }

    private func tick() {
        let due = waiting.value
        waiting.value.removeAll(keepingCapacity: true)
        for context in due { context.read() }  // a closed channel ignores it
    }
}

/// Sent down a connection's pipeline (`triggerUserOutboundEvent`) to switch its read pacing on,
/// once it publishes: the handshake and commands before that are read as they come.
public enum ReadPacing: Sendable {
    case start
}

/// Holds back a connection's reads until its pacer's next tick, once ``ReadPacing/start`` has
/// come down the pipeline. Sits next to the head, before the RTMP handler.
///
/// A read that filled its buffer means more is probably waiting (NIO's own rule for reading
/// on): the next read then goes at once, so a publisher faster than one loop's reads per tick
/// (NIO reads up to 4 × 64 KiB per wake-up, 21 Mbps at 100 ms) is not held to that.
public final class PacedReadHandler: ChannelDuplexHandler {
    public typealias InboundIn = ByteBuffer
    public typealias OutboundIn = NIOAny

    private let pacer: ReadPacer?
    private var pacing = false
    private var lastReadFilledItsBuffer = false

    /// `pacer` nil (or on another loop): reads pass straight through.
    public init(pacer: ReadPacer?) {
        self.pacer = pacer
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        lastReadFilledItsBuffer = unwrapInboundIn(data).writableBytes == 0
        context.fireChannelRead(data)
    }

    public func read(context: ChannelHandlerContext) {
        if pacing, !lastReadFilledItsBuffer, let pacer, pacer.eventLoop === context.eventLoop {
            pacer.readAtNextTick(context)
        } else {
            context.read()
        }
    }

    public func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        if case .start? = event as? ReadPacing {
            pacing = pacer != nil
            promise?.succeed(())
        } else {
            context.triggerUserOutboundEvent(event, promise: promise)
        }
    }
}
