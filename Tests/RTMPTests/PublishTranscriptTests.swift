@testable import RTMP
import StorecastTestSupport
import Testing

/// Client-to-server bytes captured from real publishers against storecast-ingest (first 12 KB,
/// stream key replaced by a fixed fake of the same length), replayed through the handshake,
/// chunk and session state machines.
struct PublishTranscript: Sendable, CustomStringConvertible {
    let file: String
    /// Command names in the order the client sent them, up to publish.
    let commands: [String]
    let flashVer: String?
    var description: String { file }

    static let fakeKey = "sk_0123456789abcdef0123456789abcdef"

    static let all: [PublishTranscript] = [
        PublishTranscript(file: "ffmpeg-publish.bin", commands: ["connect", "releaseStream", "FCPublish", "createStream", "publish"], flashVer: "FMLE/3.0 (compatible; Lavf59.27.100)"),
        // GStreamer's rtmpsink is librtmp, the library OBS uses.
        PublishTranscript(file: "gstreamer-rtmpsink-publish.bin", commands: ["connect", "releaseStream", "FCPublish", "createStream", "publish"], flashVer: nil),
        PublishTranscript(file: "gstreamer-rtmp2sink-publish.bin", commands: ["connect", "releaseStream", "FCPublish", "createStream", "publish"], flashVer: "LNX 10,0,32,18"),
    ]
}

@Suite struct PublishTranscriptTests {
    struct Replay {
        var commands: [String] = []
        var responses: [RTMPMessage] = []
        var request: PublishRequest?
        var media: [RTMPMessage] = []
        var metadata = 0
    }

    /// Replays a capture split into `pieces`, answering the authorization with success.
    static func replay(_ pieces: [[UInt8]]) throws -> Replay {
        var handshake = HandshakeStateMachine()
        var decoder = ChunkDecoder()
        var session = ServerSessionStateMachine()
        var replay = Replay()
        var done = false
        func perform(_ actions: [ServerSessionStateMachine.Action]) {
            for action in actions {
                switch action {
                case .send(let m): replay.responses += m
                case .authorize(let r):
                    replay.request = r
                    perform(session.publishAuthorized())
                case .media(let m): replay.media.append(m)
                case .metadata: replay.metadata += 1
                case .unpublished, .close: break
                }
            }
        }
        for piece in pieces {
            if !done {
                for a in try handshake.feed(piece) {
                    if case .complete(let leftover) = a { done = true; decoder.feed(leftover) }
                }
            } else {
                decoder.feed(piece)
            }
            while done, let m = try? decoder.nextMessage() {
                if m.type == .amf0Command, let name = try AMF0.decodeAll(m.payload).first?.stringValue { replay.commands.append(name) }
                perform(session.received(m))
            }
        }
        return replay
    }

    @Test(arguments: PublishTranscript.all)
    func publishSequenceIsAcceptedWhole(_ t: PublishTranscript) throws {
        let bytes = try Fixtures.bytes("Transcripts/\(t.file)")
        let r = try Self.replay([bytes])
        #expect(Array(r.commands.prefix(t.commands.count)) == t.commands)
        let request = try #require(r.request)
        #expect(request.app == "live")
        #expect(request.streamKey == PublishTranscript.fakeKey)
        #expect(request.publishType == "live")
        #expect(request.flashVer == t.flashVer)
        let codes = r.responses.compactMap { m -> String? in
            guard m.type == .amf0Command, let values = try? AMF0.decodeAll(m.payload), values.count > 3 else { return nil }
            return values[3]["code"]?.stringValue
        }
        #expect(codes.contains("NetConnection.Connect.Success"))
        #expect(codes.last == "NetStream.Publish.Start")
        // The first media after publish are the sequence headers (AVC config and AAC config).
        let firstVideo = try #require(r.media.first { $0.type == .video })
        #expect(firstVideo.payload.prefix(2) == [0x17, 0x00])
        #expect(r.metadata == 1, "@setDataFrame onMetaData")
    }

    @Test(arguments: PublishTranscript.all)
    func sameOutcomeWhenDripFed(_ t: PublishTranscript) throws {
        let bytes = try Fixtures.bytes("Transcripts/\(t.file)")
        let whole = try Self.replay([bytes])
        let dripped = try Self.replay(bytes.map { [$0] })
        var rng = SeededGenerator(seed: UInt64(t.file.count))
        let random = try Self.replay(rng.randomSplits(bytes))
        #expect(dripped.commands == whole.commands)
        #expect(dripped.media == whole.media)
        #expect(random.media == whole.media)
        #expect(random.responses == whole.responses)
    }

    @Test(arguments: PublishTranscript.all)
    func mutatedTranscriptsNeverCrash(_ t: PublishTranscript) throws {
        let bytes = try Fixtures.bytes("Transcripts/\(t.file)")
        var rng = SeededGenerator(seed: 0xF00D)
        var stillPublished = 0
        for _ in 0..<300 {
            // Mutate after the handshake so the chunk and command layers see the damage.
            let mutated = Array(bytes[..<3073]) + rng.mutate(Array(bytes[3073...]))
            if let r = try? Self.replay([mutated]), r.request != nil { stillPublished += 1 }
        }
        // Most single-byte damage lands in media payloads: those publishes must still go through.
        #expect(stillPublished > 100, "\(stillPublished) of 300 mutated sessions reached publish")
    }
}
