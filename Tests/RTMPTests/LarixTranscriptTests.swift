import Crypto
@testable import RTMP
import StorecastTestSupport
import Testing

/// Larix Broadcaster (Softvelum's libstream, Android and iOS) is closed source, no device is
/// here to capture it, and it is not decompiled (the project models clients from public
/// sources only). What public sources show, and what this model takes from them:
/// - its handshake: the current app completes SRS's complex (digest) handshake ("complex
///   handshake success", ossrs/srs #4510, 2025); a 2019 Android build sent a C1 with a non-zero
///   version and no valid digest, which joy4 had to accept ("This fixes using Larix Broadcaster
///   for Android", Seize/joy4 PR #19). Both C1s are tried here, the digest at either offset
///   SRS checks; the version bytes are ours;
/// - a Set Chunk Size of 65535 (SRS #4510: `in.chunk=65535` right after `connect app`), sent
///   here before `connect`;
/// - `connect` with `app` and a `tcUrl` with the port (SRS #4510, nginx-rtmp `on_publish`
///   dumps), empty or absent `pageUrl`/`swfUrl`, and a flashVer "FMLE/3.0 (compatible; …"
///   (Softvelum's public SDK header: "FMLE/3.0 (compatible; customUserAgent)"; nginx-rtmp's
///   statistics show "FMLE/3.0 (compatible; Larix/nul", cut at its 31 characters, which is
///   the flashVer used here);
/// - `publish` of type live (nginx-rtmp dumps) and `@setDataFrame onMetaData` (the SDK's
///   `pushMetaData`), with no frame rate (nginx-rtmp statistics show `frame_rate` 0); 44.1 kHz
///   mono AAC and H.264 at 2 Mbit/s are the SDK guide's defaults.
///
/// Not in any public source, so chosen here as an FMLE-style publisher sends them and labelled
/// as assumptions until a capture from a device replaces them: the other `connect` fields (fpad,
/// capabilities 15, audioCodecs 1028, videoCodecs 128, videoFunction 1, no objectEncoding), no
/// releaseStream or FCPublish, transaction ids (connect 1, createStream 2, publish 0), chunk
/// streams (data 4, video 5, audio 6, publish 8), codec ids as the strings "avc1" and "mp4a",
/// and how it stops. The client's checks of the server's answers (``StrictClientParser``) are
/// ours too: the strictest reading of an FMLE-style client, so a server that passes them answers
/// only what was asked.
@Suite struct LarixTranscriptTests {
    static let flashVer = "FMLE/3.0 (compatible; Larix/nul"
    static let key = "sk_0123456789abcdef0123456789abcdef"

    /// The modelled publisher's side of the exchange after the handshake, message by message,
    /// with the point where it waits for the server's answer.
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

    /// A strict client's checks of the server's answers (ours, not Larix's: no public source
    /// shows how it parses them): only the results it asked for, a createStream result of
    /// exactly `_result, 2, null, <number>`, onStatus as `onStatus, n, null, {…}` whose level is
    /// not "error", on the created message stream.
    struct StrictClientParser {
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
        var larix: StrictClientParser
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
        var outcome = Outcome(larix: StrictClientParser())

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

        // Handshake: C0 C1; then C2 echoes S1 (S2 is not checked).
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

    /// A digest C1, at either offset scheme: which one the app uses is not public.
    static func currentAppC1(_ scheme: DigestHandshake.Scheme = .offsetAt8) -> [UInt8] {
        var rng = SeededGenerator(seed: 65535)
        return DigestHandshakeTests.digest.c1(scheme: scheme, time: 0, version: [0x0A, 0x00, 0x00, 0x01],
                                              random: (0..<1528).map { _ in UInt8.random(in: 0...255, using: &rng) })
    }

    @Test(arguments: ["old build (plain C1 with a version)", "current app (digest C1 at offset 8)", "current app (digest C1 at offset 772)"])
    func larixPublishesAndEveryAnswerPassesAStrictParser(_ build: String) throws {
        let c1 = build.hasPrefix("old") ? Self.oldBuildC1() : Self.currentAppC1(build.contains("772") ? .offsetAt772 : .offsetAt8)
        let o = try Self.exchange(c1: c1) { [$0] }
        #expect(o.stalled == nil, "\(o.stalled ?? "")")
        #expect(o.usedDigest == !build.hasPrefix("old"), "the server answers a digest C1 with the digest handshake")
        #expect(o.larix.state == .publishing(ServerSessionStateMachine.publishStreamID), "\(o.larix.state)")
        #expect(o.larix.acknowledgementWindow == ServerSessionStateMachine.windowAcknowledgementSize, "the client acknowledges once told the window")
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

    /// The strict parser can fail: an extra `_result` (as a server answering a transaction-0
    /// publish would send) or a createStream result without the null closes the connection.
    @Test func theStrictParserRejectsAnswersItDidNotAskFor() {
        var p = StrictClientParser()
        p.received(.command([.string("_result"), .number(1), .null, .null]))
        #expect(p.state == .connected)
        p.state = .creatingStream
        p.received(.command([.string("_result"), .number(2), .number(1)]))
        if case .closed = p.state {} else { Issue.record("a createStream result without the null must close: \(p.state)") }
        var q = StrictClientParser()
        q.state = .created(1)
        q.received(.command([.string("_result"), .number(0), .null]))
        if case .closed = q.state {} else { Issue.record("a stray _result must close: \(q.state)") }
        var r = StrictClientParser()
        r.state = .created(1)
        r.received(.command([.string("onStatus"), .number(0), .null, .object([("level", .string("status"))])], streamID: 2))
        #expect(r.state == .created(1), "status on another message stream is not the publish")
    }
}
