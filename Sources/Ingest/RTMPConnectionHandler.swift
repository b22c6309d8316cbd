import Crypto
import Logging
import Metrics
import NIOCore
import RTMP
import StorecastWire
import Synchronization

/// One publisher's TCP connection: handshake, chunk stream and command state machines from the
/// pure RTMP module, driven here; this handler only moves bytes and carries out actions.
public final class RTMPConnectionHandler: ChannelInboundHandler {
    public typealias InboundIn = ByteBuffer
    public typealias OutboundOut = ByteBuffer

    private var handshake = HandshakeStateMachine(digest: DigestHandshake(hmac: RTMPConnectionHandler.hmacSHA256))
    private var handshakeDone = false
    private var decoder: ChunkDecoder
    private let limits: RTMPConnectionLimits
    /// Set once the peer asked to publish: from then on it may send media-sized messages.
    private var publishRequested = false
    private var bytesBeforePublish = 0
    private var deadlines: [Scheduled<Void>] = []
    private var encoder = ChunkEncoder()
    private var session = ServerSessionStateMachine()
    private var assembler: StreamAssembler?
    private var grant: PublishGrant?
    private var lastAcknowledged: UInt64 = 0
    private var describedSize: (Int, Int)?
    /// Measures the frame rate when the metadata declares none.
    private var frameRate = FrameRateEstimator()
    private var bitrate = SourceBitrateMeter()
    private var lastReported = ContinuousClock.now - .seconds(1)
    private let gate: any PublishSink
    private var logger: Logger
    private var remote = "unknown"
    /// Identifies this connection in the live-stream table.
    private let owner = RTMPConnectionHandler.nextOwner.add(1, ordering: .relaxed).newValue
    private static let nextOwner = Atomic<Int>(0)

    private let bytesIn = Counter(label: "storecast_ingest_bytes_total")
    private let rejectedTags = Counter(label: "storecast_ingest_rejected_tags_total")
    private let timestampCorrections = Counter(label: "storecast_ingest_timestamp_corrections_total")

    /// swift-crypto's HMAC-SHA256 for the digest handshake.
    static let hmacSHA256: DigestHandshake.HMACSHA256 = { key, message in
        Array(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key)))
    }

    public init(gate: any PublishSink, limits: RTMPConnectionLimits = .init(), logger: Logger) {
        self.gate = gate
        self.limits = limits
        self.decoder = ChunkDecoder(limits: limits.decoderBeforePublish)
        self.logger = logger
    }

    public func channelActive(context: ChannelHandlerContext) {
        remote = context.remoteAddress.map { "\($0.ipAddress ?? "?"):\($0.port ?? 0)" } ?? "unknown"
        logger[metadataKey: "remote"] = "\(remote)"
        let loop = context.eventLoop
        let bound = NIOLoopBound(self, eventLoop: loop), boundContext = NIOLoopBound(context, eventLoop: loop)
        deadlines = [
            loop.scheduleTask(in: TimeAmount(limits.handshakeTimeout)) {
                if !bound.value.handshakeDone { bound.value.refuse(.handshakeTimeout, "the RTMP handshake did not complete within \(bound.value.limits.handshakeTimeout)", context: boundContext.value) }
            },
            loop.scheduleTask(in: TimeAmount(limits.publishTimeout)) {
                if bound.value.grant == nil { bound.value.refuse(.publishTimeout, "no authorized publish within \(bound.value.limits.publishTimeout) of connecting", context: boundContext.value) }
            },
        ]
        context.fireChannelActive()
    }

    /// Closes a connection that went past one of its ``RTMPConnectionLimits``, logged and counted.
    private func refuse(_ reason: RTMPConnectionLimits.CloseReason, _ detail: String, context: ChannelHandlerContext) {
        Counter(label: "storecast_ingest_connections_closed_total", dimensions: [("reason", reason.rawValue)]).increment()
        logger.warning("closing RTMP connection: \(detail)", metadata: ["limit": "\(reason.rawValue)"])
        context.close(promise: nil)
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        bytesIn.increment(by: buffer.readableBytes)
        if !publishRequested {
            bytesBeforePublish += buffer.readableBytes
        }
        do {
            if !handshakeDone {
                for action in try handshake.feed(Array(buffer.readableBytesView)) {
                    switch action {
                    case .send(let out): write(context, out)
                    case .complete(let leftover):
                        handshakeDone = true
                        logger.debug("handshake complete", metadata: ["digest": "\(handshake.usedDigest)"])
                        decoder.feed(leftover)
                    case .needMoreBytes: break
                    }
                }
            } else {
                buffer.withUnsafeReadableBytes { decoder.feed($0) }
            }
            while handshakeDone, let message = try decoder.nextMessage() {
                perform(session.received(message), context: context)
            }
            if decoder.bytesReceived - lastAcknowledged >= UInt64(ServerSessionStateMachine.windowAcknowledgementSize) {
                lastAcknowledged = decoder.bytesReceived
                send(context, [.acknowledgement(UInt32(truncatingIfNeeded: decoder.bytesReceived))])
            }
            if pendingFlush {
                pendingFlush = false
                context.flush()
            }
            // After this read's commands ran: a read holding `publish` and the first media is fine.
            if !publishRequested, bytesBeforePublish > limits.maximumBytesBeforePublish {
                refuse(.bytesBeforePublish, "more than \(limits.maximumBytesBeforePublish) bytes before asking to publish", context: context)
            }
        } catch {
            logger.warning("closing RTMP connection: malformed input", metadata: ["error": "\(error)"])
            context.close(promise: nil)
        }
    }

    private func perform(_ actions: [ServerSessionStateMachine.Action], context: ChannelHandlerContext) {
        self.context = context
        for action in actions {
            switch action {
            case .send(let messages):
                send(context, messages)
            case .authorize(let request):
                publishRequested = true
                decoder.limits = .publishing
                authorize(request, context: context)
            case .media(let message):
                media(message)
            case .metadata(let values):
                // @setDataFrame onMetaData {framerate, …}: the encoder's declared frame rate.
                if let grant, let properties = values.last, let fps = (properties["framerate"] ?? properties["fps"])?.numberValue, fps > 0, fps < 1000 {
                    if let reason = grant.sourceLimits.refusal(frameRate: fps) {
                        refuseSource(reason)
                        return
                    }
                    frameRate.declared()
                    gate.frameRate(grant, fps)
                }
            case .unpublished:
                if let grant { gate.unpublished(grant, owner: owner) }
                grant = nil
                assembler = nil
            case .close(let reason, let messages):
                send(context, messages)
                logger.info("closing RTMP connection", metadata: ["reason": "\(reason)"])
                // Close once what was written (the error status) has been flushed.
                context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(capacity: 0))).assumeIsolated().whenComplete { _ in
                    context.close(promise: nil)
                }
            }
        }
    }

    private func authorize(_ request: PublishRequest, context: ChannelHandlerContext) {
        let gate = self.gate
        let remote = self.remote
        let owner = self.owner
        let channel = context.channel
        let closer: @Sendable (String) -> Void = { reason in
            channel.eventLoop.execute { channel.close(promise: nil) }
        }
        let future = context.eventLoop.makeFutureWithTask { await gate.authorize(request, remote: remote, owner: owner, closer: closer) }
        future.assumeIsolated().whenSuccess { result in
            switch result {
            case .success(let grant):
                self.grant = grant
                self.assembler = StreamAssembler(
                    identity: .init(streamID: grant.streamID, sessionID: grant.sessionID, tenant: grant.tenant, streamName: grant.streamName),
                    continuing: grant.continuing, gap: grant.gap)
                self.logger[metadataKey: "stream"] = "\(grant.streamName)"
                self.perform(self.session.publishAuthorized(), context: context)
                // Media from here on: read it in paced batches (``ReadPacer``).
                context.triggerUserOutboundEvent(ReadPacing.start, promise: nil)
            case .failure(let rejection):
                self.perform(self.session.publishRejected(rejection), context: context)
            }
            context.flush()
        }
    }

    /// Set by ``perform(_:context:)`` so media handling can close the connection.
    private var context: ChannelHandlerContext?

    private func media(_ message: RTMPMessage) {
        guard var assembler = self.assembler, let grant, let eventLoop = context?.eventLoop else { return }
        self.assembler = nil  // keep the assembler uniquely referenced while it is mutated
        for event in assembler.received(message) {
            switch event {
            case .message(let wire):
                // Over the tenant's limits: refused before any of it goes on.
                if case .streamAnnounce(let a) = wire, let v = a.tracks.first(where: { $0.kind == .video }),
                   let reason = grant.sourceLimits.refusal(width: Int(v.width), height: Int(v.height)) {
                    return refuseSource(reason)
                }
                gate.forward(wire, streamID: grant.streamID, on: eventLoop)
                if case .accessUnit(let unit) = wire, let bps = bitrate.unit(bytes: unit.data.count, dts: unit.dts) {
                    gate.sourceBitrate(grant, bps)
                }
                if case .accessUnit(let unit) = wire, unit.trackID == StreamAssembler.videoTrack, let fps = frameRate.frame(dts: unit.dts) {
                    if let reason = grant.sourceLimits.refusal(frameRate: fps) { return refuseSource(reason) }
                    gate.frameRate(grant, fps)
                }
                if case .streamAnnounce(let a) = wire, let v = a.tracks.first(where: { $0.kind == .video }), describedSize.map({ $0 != (Int(v.width), Int(v.height)) }) ?? true {
                    describedSize = (Int(v.width), Int(v.height))
                    gate.describe(grant, width: Int(v.width), height: Int(v.height), video: v.codec, audio: a.tracks.first { $0.kind == .audio }?.codec)
                }
            case .rejectedTag(let reason):
                rejectedTags.increment()
                logger.debug("media tag rejected", metadata: ["reason": "\(reason)"])
            case .timestampCorrected:
                timestampCorrections.increment()
            case .unsupported(let reason):
                logger.warning("publish refused: unsupported codec", metadata: ["reason": "\(reason)"])
                if let context { perform(session.publishFailed(reason), context: context) }
                return
            }
        }
        self.assembler = assembler
        // Liveness and timeline for the live-stream table, a few times a second (not per frame).
        let now = ContinuousClock.now
        if now - lastReported >= .milliseconds(250), let timeline = assembler.timeline {
            lastReported = now
            gate.media(grant, owner: owner, timeline: timeline)
        }
    }

    /// The source is over the tenant's ``SourceLimits``: the publish fails with the reason.
    private func refuseSource(_ reason: String) {
        Counter(label: "storecast_ingest_publish_source_refused_total").increment()
        logger.warning("publish refused: source over the tenant's limits", metadata: ["reason": "\(reason)"])
        if let context { perform(session.publishFailed(reason), context: context) }
    }

    public func channelInactive(context: ChannelHandlerContext) {
        for deadline in deadlines { deadline.cancel() }
        deadlines = []
        self.context = nil
        _ = session.connectionClosed()
        if let grant {
            // Not an unpublish: the publisher may come back within the reconnect window.
            gate.dropped(grant, owner: owner, timeline: assembler?.timeline)
            self.grant = nil
            self.assembler = nil
        }
        context.fireChannelInactive()
    }

    public func errorCaught(context: ChannelHandlerContext, error: Error) {
        logger.info("RTMP connection error", metadata: ["error": "\(error)"])
        context.close(promise: nil)
    }

    private func send(_ context: ChannelHandlerContext, _ messages: [RTMPMessage]) {
        for message in messages {
            write(context, encoder.encode(message))
            if message.type == .setChunkSize, message.payload.count == 4 {
                let size = Int(message.payload[0]) << 24 | Int(message.payload[1]) << 16 | Int(message.payload[2]) << 8 | Int(message.payload[3])
                encoder.setChunkSize(size)
            }
        }
    }

    private var pendingFlush = false

    private func write(_ context: ChannelHandlerContext, _ bytes: [UInt8]) {
        pendingFlush = true
        var buffer = context.channel.allocator.buffer(capacity: bytes.count)
        buffer.writeBytes(bytes)
        context.write(wrapOutboundOut(buffer), promise: nil)
    }
}
