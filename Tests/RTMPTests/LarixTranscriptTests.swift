import Crypto
@testable import RTMP
import StorecastTestSupport
import Testing

/// Larix Broadcaster (Softvelum's libstream, Android and iOS) is closed source and no device is
/// here to capture it. Its exchange is taken from public evidence instead:
/// - decompiled copies of `com.wmspanel.libstream` (`RtmpConnection`, `RtmpChunkStream`,
///   `RtmpHelper`; builds whose user agent is "Larix/1.0.28" and "Larix/1.0.32"): the bytes it
///   sends and the checks its response parser makes;
/// - SRS issue #4510 (2025, the current app): "complex handshake success", `in.chunk=65535`
///   right after connect, `tcUrl=rtmp://HOST:1935/live, pageUrl=, swfUrl=`;
/// - nginx-rtmp `on_publish` dumps: `flashver` "FMLE/3.0 (compatible; Larix/…", `call` publish,
///   `type` live.
///
/// What it sends: C0 3 and a C1 with version 0a 00 00 01 (the old builds; the current app's C1
/// carries a digest); Set Chunk Size 65535 before `connect`; `connect` (transaction 1) with an
/// AMF0 object of app, tcUrl (port always written), flashVer, fpad, capabilities 15,
/// audioCodecs 1028, videoCodecs 128, videoFunction 1 and no objectEncoding; then, each after
/// the previous answer, `createStream` (2) and `publish` (transaction 0, chunk stream 8) — no
/// releaseStream or FCPublish; `@setDataFrame onMetaData` as an AMF0 object on chunk stream 4
/// whose codec ids are the strings "avc1" and "mp4a" and which has no framerate; video on
/// chunk stream 5, audio on 6, composition time 0.
///
/// What it requires (``LarixResponseParser``): commands as AMF0 on a chunk stream other than 2;
/// `_result` only for transactions 1 and 2 (any other closes the connection: "unknown command
/// _result response"); the createStream result exactly `_result, 2, null, <number>`; onStatus as
/// `onStatus, n, null, {…}`, level not "error", on the created message stream.
@Suite struct LarixTranscriptTests {
    static let flashVer = "FMLE/3.0 (compatible; Larix/1.0.32)"
    static let key = "sk_0123456789abcdef0123456789abcdef"

    /// Larix's side of the exchange after the handshake, message by message, with the point
    /// where it waits for the server's answer.
    enum Step { case send(RTMPMessage), setChunkSize(Int), awaitConnected, awaitStreamCreated, awaitPublishing }

    static func steps(port: Int) -> [Step] {
        let connect: [(String, AMF0Value)] = [
            ("app", .string("live")), ("tcUrl", .string("rtmp://127.0.0.1:\(port)/live")), ("flashVer", .string(flashVer)),
            ("fpad", .boolean(false)), ("capabilities", .number(15)), ("audioCodecs", .number(1028)),
            ("videoCodecs", .number(128)), ("videoFunction", .number(1)),
        ]
        let metadata: [(String, AMF0Value)] = [
            ("width", .number(1280)), ("height", .number(720)), ("videodatarate", .number(2000)), ("videocodecid", .string("avc1")),
            ("audiosamplerate", .number(44100)), ("audiodatarate", .number(128)), ("audiosamplesize", .number(16)),
            ("stereo", .boolean(false)), ("audiocodecid", .string("mp4a")),
        ]
        let stream = ServerSessionStateMachine.publishStreamID
        func media(_ csid: UInt32, _ type: RTMPMessageType, _ ts: UInt32, _ payload: [UInt8]) -> Step {
            .send(RTMPMessage(chunkStreamID: csid, timestamp: ts, typeID: type.rawValue, messageStreamID: stream, payload: payload))
        }
        var steps: [Step] = [
            .send(.setChunkSize(65535)), .setChunkSize(65535),
            .send(.command([.string("connect"), .number(1), .object(connect)])), .awaitConnected,
            .send(.command([.string("createStream"), .number(2), .null])), .awaitStreamCreated,
            .send(RTMPMessage(chunkStreamID: 8, timestamp: 0, typeID: RTMPMessageType.amf0Command.rawValue, messageStreamID: stream,
                              payload: AMF0.encode([.string("publish"), .number(0), .null, .string(key), .string("live")]))),
            .awaitPublishing,
            .send(RTMPMessage(chunkStreamID: 4, timestamp: 0, typeID: RTMPMessageType.amf0Data.rawValue, messageStreamID: stream,
                              payload: AMF0.encode([.string("@setDataFrame"), .string("onMetaData"), .object(metadata)]))),
            // Sequence headers go out with the first frame: AVC (baseline 320x240) and AAC-LC.
            media(5, .video, 0, [0x17, 0x00, 0, 0, 0] + [0x01, 0x42, 0xC0, 0x0D, 0xFF, 0xE1, 0x00, 0x18] + ParameterSetFixtures.baselineSPS320x240 + [0x01, 0x00, 0x04, 0x68, 0xCB, 0x83, 0xCB]),
            media(6, .audio, 0, [0xAF, 0x00, 0x12, 0x10]),
        ]
        // A GOP of 30 frames (a 70 KB keyframe: several 65535-byte chunks) and AAC every 23 ms.
        for i in 0..<30 {
            let size = i == 0 ? 70_000 : 1_500
            steps.append(media(5, .video, UInt32(i * 33), [i == 0 ? 0x17 : 0x27, 0x01, 0, 0, 0] + (UInt32(size - 4).bigEndianBytes) + [i == 0 ? 0x65 : 0x41] + [UInt8](repeating: 0xAB, count: size - 5)))
            steps.append(media(6, .audio, UInt32(i * 23), [0xAF, 0x01] + [UInt8](repeating: 0x21, count: 370)))
        }
        return steps
    }

    /// The checks Larix's response parser makes, in the order it makes them.
    struct LarixResponseParser {
        enum State: Equatable { case connecting, connected, creatingStream, created(UInt32), publishing(UInt32), closed(String) }
        var state = State.connecting
        var acknowledgementWindow: UInt32?

        mutating func received(_ m: RTMPMessage) {
            if case .closed = state { return }
            if m.type == .windowAcknowledgementSize { acknowledgementWindow = m.payload.prefix(4).reduce(0) { $0 << 8 | UInt32($1) } }
            guard m.type == .amf0Command, m.chunkStreamID != 2, let values = try? AMF0.decodeAll(m.payload),
                  let name = values.first?.stringValue else { return }  // AMF3 and control: ignored
            let transaction = values.count > 1 ? values[1].numberValue : nil
            switch (name, state) {
            case ("_result", .connecting) where transaction == 1:
                state = .connected
            case ("_result", .creatingStream) where transaction == 2:
                guard values.count == 4, values[2] == .null, let id = values[3].numberValue else {
                    state = .closed("createStream result is not _result, 2, null, <number>: \(values)")
                    return
                }
                state = .created(UInt32(id))
            case ("_result", _), ("_error", _):
                state = .closed("unknown command \(name) response (transaction \(transaction ?? -1)) in \(state)")
            case ("onStatus", _):
                guard values.count >= 4, values[2] == .null, case .object = values[3] else {
                    state = .closed("onStatus is not onStatus, n, null, {…}: \(values)")
                    return
                }
                if values[3]["level"]?.stringValue == "error" {
                    state = .closed("error status \(values[3]["code"]?.stringValue ?? "?")")
                } else if case .created(let id) = state, m.messageStreamID == id {
                    state = .publishing(id)
                }
            default:
                break  // onBWDone, onFCPublish and the rest are ignored
            }
        }
    }

    struct Outcome {
        var larix: LarixResponseParser
        var request: PublishRequest?
        var media: [RTMPMessage] = []
        var metadata: [[AMF0Value]] = []
        var stalled: String?
        var usedDigest = false
    }

    /// Runs Larix's steps against the server's handshake and session state machines: its bytes
    /// go through our chunk encoder to the server's decoder split as `split` says, the server's
    /// answers through the server's encoder back to a client decoder and the parser above.
    static func exchange(c1: [UInt8], split: ([UInt8]) -> [[UInt8]]) throws -> Outcome {
        var handshake = HandshakeStateMachine(digest: DigestHandshakeTests.digest)
        var serverDecoder = ChunkDecoder(), serverEncoder = ChunkEncoder()
        var clientEncoder = ChunkEncoder(), clientDecoder = ChunkDecoder()
        var session = ServerSessionStateMachine()
        var outcome = Outcome(larix: LarixResponseParser())

        func serverSends(_ messages: [RTMPMessage]) throws {
            for m in messages {
                clientDecoder.feed(serverEncoder.encode(m))
                if m.type == .setChunkSize { serverEncoder.setChunkSize(Int(m.payload.prefix(4).reduce(0) { $0 << 8 | UInt32($1) })) }
            }
            while let m = try clientDecoder.nextMessage() { outcome.larix.received(m) }
        }
        func perform(_ actions: [ServerSessionStateMachine.Action]) throws {
            for action in actions {
                switch action {
                case .send(let m): try serverSends(m)
                case .authorize(let r):
                    outcome.request = r
                    try perform(session.publishAuthorized())
                case .media(let m): outcome.media.append(m)
                case .metadata(let v): outcome.metadata.append(v)
                case .close(let reason, let m):
                    try serverSends(m)
                    outcome.larix.state = .closed("server closed: \(reason)")
                case .unpublished: break
                }
            }
        }
        func clientSends(_ bytes: [UInt8]) throws {
            for piece in split(bytes) {
                serverDecoder.feed(piece)
                while let m = try serverDecoder.nextMessage() { try perform(session.received(m)) }
            }
        }

        // Handshake: C0 C1; then C2 echoes S1 (Larix never checks S2).
        guard case .send(let s0s1s2) = try handshake.feed([3] + c1).first else { throw LarixFailure.noServerHandshake }
        var leftover: [UInt8] = []
        for case .complete(let rest) in try handshake.feed(Array(s0s1s2[1...1536])) { leftover = rest }
        #expect(handshake.state == .done)
        outcome.usedDigest = handshake.usedDigest
        serverDecoder.feed(leftover)

        for step in steps(port: 1935) {
            switch step {
            case .send(let m): try clientSends(clientEncoder.encode(m))
            case .setChunkSize(let size): clientEncoder.setChunkSize(size)
            case .awaitConnected:
                guard outcome.larix.state == .connected else { outcome.stalled = "no connect result: \(outcome.larix.state)"; return outcome }
                outcome.larix.state = .creatingStream
            case .awaitStreamCreated:
                guard case .created = outcome.larix.state else { outcome.stalled = "no createStream result: \(outcome.larix.state)"; return outcome }
            case .awaitPublishing:
                guard case .publishing = outcome.larix.state else { outcome.stalled = "not publishing: \(outcome.larix.state)"; return outcome }
            }
        }
        return outcome
    }

    enum LarixFailure: Error { case noServerHandshake }

    static func oldBuildC1() -> [UInt8] {
        var rng = SeededGenerator(seed: 1028)
        return [0, 0, 0, 0, 0x0A, 0x00, 0x00, 0x01] + (0..<1528).map { _ in UInt8.random(in: 0...255, using: &rng) }
    }

    static func currentAppC1() -> [UInt8] {
        var rng = SeededGenerator(seed: 65535)
        return DigestHandshakeTests.digest.c1(scheme: .offsetAt8, time: 0, version: [0x0A, 0x00, 0x00, 0x01],
                                              random: (0..<1528).map { _ in UInt8.random(in: 0...255, using: &rng) })
    }

    @Test(arguments: ["old build (plain C1 with a version)", "current app (digest C1)"])
    func larixPublishesAndEveryAnswerPassesItsParser(_ build: String) throws {
        let c1 = build.hasPrefix("old") ? Self.oldBuildC1() : Self.currentAppC1()
        let o = try Self.exchange(c1: c1) { [$0] }
        #expect(o.stalled == nil, "\(o.stalled ?? "")")
        #expect(o.usedDigest == !build.hasPrefix("old"), "the server answers a digest C1 with the digest handshake")
        #expect(o.larix.state == .publishing(ServerSessionStateMachine.publishStreamID), "\(o.larix.state)")
        #expect(o.larix.acknowledgementWindow == ServerSessionStateMachine.windowAcknowledgementSize, "Larix acknowledges once told the window")
        let request = try #require(o.request)
        #expect(request.app == "live" && request.streamKey == Self.key && request.publishType == "live")
        #expect(request.flashVer == Self.flashVer && request.tcUrl == "rtmp://127.0.0.1:1935/live")
        // Metadata read with string codec ids and no frame rate; media in order, sequence headers first.
        #expect(o.metadata.count == 1 && o.metadata.first?.last?["videocodecid"] == .string("avc1"))
        #expect(o.media.count == 62)
        #expect(o.media.first?.payload.prefix(2) == [0x17, 0x00] && o.media.first?.chunkStreamID == 5)
        #expect(o.media.filter { $0.type == .video }.map(\.timestamp) == [0] + (0..<30).map { UInt32($0 * 33) })
        #expect(o.media.first { $0.type == .video && $0.payload.count > 70_000 } != nil, "the keyframe larger than one 65535-byte chunk arrived whole")
    }

    /// The same exchange with Larix's bytes arriving one at a time and in random pieces.
    @Test func sameOutcomeWhenDripFedOrSplitAtRandom() throws {
        let whole = try Self.exchange(c1: Self.currentAppC1()) { [$0] }
        let dripped = try Self.exchange(c1: Self.currentAppC1()) { $0.map { [$0] } }
        var rng = SeededGenerator(seed: 6)
        let random = try Self.exchange(c1: Self.currentAppC1()) { rng.randomSplits($0) }
        #expect(dripped.media == whole.media && random.media == whole.media)
        #expect(dripped.larix.state == whole.larix.state && random.larix.state == whole.larix.state)
        #expect(whole.media.count == 62)
    }

    /// The parser model can fail: an extra `_result` (as a server answering a transaction-0
    /// publish would send) or a createStream result without the null closes Larix's connection.
    @Test func theParserModelRejectsWhatLarixRejects() {
        var p = LarixResponseParser()
        p.received(.command([.string("_result"), .number(1), .null, .null]))
        #expect(p.state == .connected)
        p.state = .creatingStream
        p.received(.command([.string("_result"), .number(2), .number(1)]))
        if case .closed = p.state {} else { Issue.record("a createStream result without the null must close: \(p.state)") }
        var q = LarixResponseParser()
        q.state = .created(1)
        q.received(.command([.string("_result"), .number(0), .null]))
        if case .closed = q.state {} else { Issue.record("a stray _result must close: \(q.state)") }
        var r = LarixResponseParser()
        r.state = .created(1)
        r.received(.command([.string("onStatus"), .number(0), .null, .object([("level", .string("status"))])], streamID: 2))
        #expect(r.state == .created(1), "status on another message stream is not the publish")
    }
}
