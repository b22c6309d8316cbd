@testable import Ingest
import Logging
import NIOCore
import NIOEmbedded
@testable import RTMP
import StorecastTestSupport
import StorecastWire
import Synchronization
import Testing

/// A fake ``PublishSink``: a struct of closures' worth of recording, no database, no ZeroMQ.
final class RecordingSink: PublishSink {
    let accept: Bool
    let forwarded = Mutex<[WireMessage]>([])
    let events = Mutex<[String]>([])

    init(accept: Bool) { self.accept = accept }

    func authorize(_ request: PublishRequest, remote: String, owner: Int, closer: @escaping @Sendable (String) -> Void) async -> Result<PublishGrant, ServerSessionStateMachine.Rejection> {
        events.withLock { $0.append("authorize \(request.streamKey)") }
        return accept
            ? .success(PublishGrant(streamID: 1, sessionID: 1, tenant: "t", streamName: "s", continuing: nil, gap: .zero, resumed: false))
            : .failure(.badName("Unknown stream key."))
    }
    func forward(_ message: WireMessage, streamID: Int64, on eventLoop: any EventLoop) { forwarded.withLock { $0.append(message) } }
    func media(_ grant: PublishGrant, owner: Int, timeline: StreamTimeline) {}
    func describe(_ grant: PublishGrant, width: Int?, height: Int?, video: String?, audio: String?) {
        events.withLock { $0.append("describe \(width ?? 0)x\(height ?? 0)") }
    }
    func frameRate(_ grant: PublishGrant, _ fps: Double) { events.withLock { $0.append("framerate \(Int(fps))") } }
    func sourceBitrate(_ grant: PublishGrant, _ bitsPerSecond: Int) { events.withLock { $0.append("bitrate") } }
    func unpublished(_ grant: PublishGrant, owner: Int) { events.withLock { $0.append("unpublished") } }
    func dropped(_ grant: PublishGrant, owner: Int, timeline: StreamTimeline?) { events.withLock { $0.append("dropped") } }
}

/// Records the read-pacing switch the RTMP handler sends down the pipeline.
final class PacingRecorder: ChannelOutboundHandler, Sendable {
    typealias OutboundIn = NIOAny
    let started = Mutex(false)
    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        if case .start? = event as? ReadPacing { started.withLock { $0 = true } }
        promise?.succeed(())
    }
}

/// The channel handler driven through NIO's testing channel with captured publisher bytes,
/// fed whole, one byte at a time and in random pieces.
@Suite struct RTMPConnectionHandlerTests {
    enum Feeding: String, CaseIterable, Sendable { case whole, byteByByte, randomSplits }

    static func transcript() throws -> [UInt8] {
        try Fixtures.bytes("../RTMPTests/Transcripts/ffmpeg-publish.bin")
    }

    struct Outcome {
        var statusCodes: [String] = []
        var forwarded: [WireMessage] = []
        var events: [String] = []
        var isActive = true
        var handshakeAnswered = false
        var pacingStarted = false
    }

    static func run(_ bytes: [UInt8], feeding: Feeding, accept: Bool) async throws -> Outcome {
        let sink = RecordingSink(accept: accept)
        let channel = NIOAsyncTestingChannel()
        let pacing = PacingRecorder()
        try await channel.pipeline.addHandler(pacing)
        try await channel.pipeline.addHandler(RTMPConnectionHandler(gate: sink, logger: Logger(label: "test")))
        try await channel.connect(to: try SocketAddress(ipAddress: "127.0.0.1", port: 1935)).get()
        var pieces: [[UInt8]]
        switch feeding {
        case .whole: pieces = [bytes]
        case .byteByByte: pieces = bytes.map { [$0] }
        case .randomSplits:
            var rng = SeededGenerator(seed: 42)
            pieces = rng.randomSplits(bytes)
        }
        var outbound: [UInt8] = []
        for piece in pieces {
            try await channel.writeInbound(ByteBuffer(bytes: piece))
            // Let the authorization task hop back onto the loop.
            for _ in 0..<3 { await Task.yield(); await channel.testingEventLoop.run() }
            while let out = try await channel.readOutbound(as: ByteBuffer.self) { outbound += Array(out.readableBytesView) }
        }
        for _ in 0..<20 { await Task.yield(); await channel.testingEventLoop.run() }
        while let out = try await channel.readOutbound(as: ByteBuffer.self) { outbound += Array(out.readableBytesView) }
        var outcome = Outcome()
        outcome.isActive = channel.isActive
        outcome.pacingStarted = pacing.started.withLock { $0 }
        outcome.handshakeAnswered = outbound.count > 1 + 2 * 1536 && outbound.first == 3
        // S0 S1 S2, then chunks from the server.
        var decoder = ChunkDecoder()
        decoder.feed(outbound.dropFirst(1 + 2 * 1536))
        while let m = try decoder.nextMessage() {
            if m.type == .amf0Command, let values = try? AMF0.decodeAll(m.payload), values.first == .string("onStatus") || values.first == .string("_result"),
               values.count > 3, let code = values[3]["code"]?.stringValue {
                outcome.statusCodes.append(code)
            }
        }
        outcome.forwarded = sink.forwarded.withLock { $0 }
        if channel.isActive { _ = try? await channel.finish() }
        outcome.events = sink.events.withLock { $0 }
        return outcome
    }

    @Test(arguments: Feeding.allCases)
    func acceptedPublishAnswersAndForwardsMedia(_ feeding: Feeding) async throws {
        let o = try await Self.run(try Self.transcript(), feeding: feeding, accept: true)
        #expect(o.handshakeAnswered)
        #expect(o.statusCodes == ["NetConnection.Connect.Success", "NetStream.Publish.Start"])
        guard case .streamAnnounce(let announce) = o.forwarded.first else { Issue.record("no announce: \(o.forwarded.prefix(1))"); return }
        #expect(announce.tracks.map(\.kind) == [.video, .audio])
        // The capture holds the first 12 KB: the sequence headers and the first audio frame.
        guard case .accessUnit(let first) = o.forwarded.dropFirst().first else { Issue.record("no unit after the announce"); return }
        #expect(first.trackID == 2 && first.dts == 0)
        #expect(o.events.first == "authorize sk_0123456789abcdef0123456789abcdef")
        #expect(o.events.contains("describe 320x240"))
        #expect(o.events.contains("framerate 15"), "ffmpeg's onMetaData framerate: \(o.events)")
        #expect(o.pacingStarted, "media is read paced once the publish is accepted")
    }

    @Test func everyFeedingForwardsTheSameMessages() async throws {
        let bytes = try Self.transcript()
        let whole = try await Self.run(bytes, feeding: .whole, accept: true).forwarded
        let dripped = try await Self.run(bytes, feeding: .byteByByte, accept: true).forwarded
        let random = try await Self.run(bytes, feeding: .randomSplits, accept: true).forwarded
        #expect(whole == dripped)
        #expect(whole == random)
    }

    /// Issue 23: before asking to publish, a connection has a byte budget (64 KiB by default):
    /// past it, it is closed, however well-formed its messages (acknowledgements here).
    @Test func bytesBeforePublishAreBudgeted() async throws {
        let handshake = Array(try Self.transcript().prefix(3073))
        let acknowledgement: [UInt8] = [0x02, 0, 0, 0, 0, 0, 4, 0x03, 0, 0, 0, 0, 0, 0, 0x10, 0]
        for (count, closes) in [(100, false), (5_000, true)] {
            let sink = RecordingSink(accept: true)
            let channel = NIOAsyncTestingChannel()
            try await channel.pipeline.addHandler(RTMPConnectionHandler(gate: sink, logger: Logger(label: "test")))
            try await channel.connect(to: try SocketAddress(ipAddress: "127.0.0.1", port: 1935)).get()
            try await channel.writeInbound(ByteBuffer(bytes: handshake))
            for _ in 0..<count where channel.isActive { try await channel.writeInbound(ByteBuffer(bytes: acknowledgement)) }
            await channel.testingEventLoop.run()
            #expect(channel.isActive == !closes, "\(count) acknowledgements (\(count * acknowledgement.count) bytes) before publish")
            if channel.isActive { _ = try? await channel.finish() }
        }
    }

    @Test func refusedPublishGetsBadNameAndTheConnectionCloses() async throws {
        let o = try await Self.run(try Self.transcript(), feeding: .whole, accept: false)
        #expect(o.statusCodes == ["NetConnection.Connect.Success", "NetStream.Publish.BadName"])
        #expect(o.forwarded.isEmpty)
        #expect(!o.isActive, "connection closed")
        #expect(!o.pacingStarted)
    }

    @Test func garbageAfterTheHandshakeClosesOnlyThatConnection() async throws {
        var bytes = Array(try Self.transcript().prefix(3073))
        bytes += [0x04, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0x09, 1, 0, 0, 0]  // fmt 0, a 16 MiB message
        let o = try await Self.run(bytes, feeding: .whole, accept: true)
        #expect(!o.isActive)
        #expect(o.forwarded.isEmpty)
    }
}
