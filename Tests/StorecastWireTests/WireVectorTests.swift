import Foundation
import StorecastTestSupport
@testable import StorecastWire
import Testing

/// The Swift value of every vector in schemas/wire/vectors.json, by name. The JSON is made from
/// schemas/wire.md by a separate Python script, so encoder and document are checked against
/// each other.
let wireCases: [String: WireMessage] = [
    "announce-ingest-h264-aac": .streamAnnounce(StreamAnnounce(
        streamID: 42, sessionID: 7, tenant: "demo", streamName: "demo-show", discontinuity: false, tracks: [
            TrackConfig(trackID: 1, kind: .video, codec: "h264", name: "source", timescale: 1000, width: 854, height: 480, config: Hex.bytes("0164001fffe1")),
            TrackConfig(trackID: 2, kind: .audio, codec: "aac", name: "audio", timescale: 1000, sampleRate: 44100, channels: 1, config: [0x12, 0x08]),
        ])),
    "announce-worker-with-lease": .streamAnnounce(StreamAnnounce(
        streamID: 42, sessionID: 7, tenant: "demo", streamName: "demo-show", discontinuity: false, tracks: [
            TrackConfig(trackID: 1, kind: .video, codec: "h264", name: "360p", timescale: 90000, width: 640, height: 360, bitrate: 400_000, config: Hex.bytes("0164001e")),
        ], leaseTicket: Array(0..<40))),
    "access-unit-keyframe": .accessUnit(AccessUnit(streamID: 42, trackID: 1, flags: 1, sequence: 1, dts: 0, compositionOffset: 66, data: Hex.bytes("000000026588"))),
    "access-unit-negative-dts": .accessUnit(AccessUnit(streamID: 42, trackID: 2, flags: 0, sequence: 9, dts: -21, compositionOffset: 0, data: [])),
    "stream-end": .streamEnd(StreamEnd(streamID: 42, reason: "disconnected")),
    "thumbnail": .thumbnail(Thumbnail(streamID: 42, pts: 450_000, width: 640, height: 360, jpeg: [0xFF, 0xD8, 0xFF, 0xD9])),
    "thumbnail-with-placeholder": .thumbnail(Thumbnail(streamID: 42, pts: 450_000, width: 640, height: 360, jpeg: [0xFF, 0xD8, 0xFF, 0xD9],
                                                       placeholder: [0xFF, 0xD8, 0xFF, 0xDB, 0x00, 0xFF, 0xD9])),
    "worker-ready": .workerReady(WorkerStatus(workerID: "transcoder-a", capacity: 2, streams: [])),
    "worker-heartbeat": .workerHeartbeat(WorkerStatus(workerID: "transcoder-a", capacity: 2, streams: [42, 43])),
    "assign": .assign(Assignment(streamID: 42, packagerEndpoint: "tcp://127.0.0.1:5602")),
    "assign-with-profile": .assign(Assignment(streamID: 42, packagerEndpoint: "tcp://127.0.0.1:5602", profile: TranscodeProfile(
        name: "mobile", rungs: [.init(name: "720p", shortSide: 720, bitrate: 1_800_000), .init(name: "360p", shortSide: 360, bitrate: 500_000)],
        preset: "veryfast", gopSeconds: 1, lowLatency: true))),
    "assign-with-replay": .assign(Assignment(streamID: 42, packagerEndpoint: "tcp://127.0.0.1:5602", replayUntil: 123_456)),
    "assign-with-lease": .assign(Assignment(streamID: 42, packagerEndpoint: "tcp://127.0.0.1:5602", leaseTicket: Array(0..<40))),
    "assign-with-replay-and-lease": .assign(Assignment(streamID: 42, packagerEndpoint: "tcp://127.0.0.1:5602", replayUntil: 123_456, leaseTicket: Array(0..<40))),
    "assign-with-lease-and-ceiling": .assign(Assignment(streamID: 42, packagerEndpoint: "tcp://127.0.0.1:5602", leaseTicket: Array(0..<40), ladderCeiling: 720)),
    "assign-with-ceiling": .assign(Assignment(streamID: 42, packagerEndpoint: "tcp://127.0.0.1:5602", ladderCeiling: 480)),
    "batch": .batch([
        .accessUnit(AccessUnit(streamID: 42, trackID: 1, flags: 1, sequence: 1, dts: 0, compositionOffset: 66, data: Hex.bytes("000000026588"))),
        .streamEnd(StreamEnd(streamID: 42, reason: "disconnected")),
    ]),
    "release": .release(streamID: 42),
    "lease-renewal": .leaseRenewal(streamID: 42, ticket: Array(100..<148)),
    "telemetry": .telemetry(Telemetry(service: "ingest", node: "ingest-a", pid: 1234, uptimeSeconds: 60, exposition: "up 1\n")),
]

struct WireVector: Decodable, Sendable, CustomStringConvertible {
    let name: String
    let hex: String
    var description: String { name }

    static func load() throws -> [WireVector] {
        let url = Fixtures.repositoryRoot().appendingPathComponent("schemas/wire/vectors.json")
        return try JSONDecoder().decode([WireVector].self, from: Data(contentsOf: url))
    }
}

@Suite struct WireVectorTests {
    @Test func everyVectorHasASwiftCaseAndEveryKindIsCovered() throws {
        let vectors = try WireVector.load()
        #expect(Set(vectors.map(\.name)) == Set(wireCases.keys))
        let kinds = Set(wireCases.values.map(\.kind.rawValue))
        #expect(kinds == [0x01, 0x02, 0x03, 0x04, 0x05, 0x10, 0x11, 0x12, 0x13, 0x14, 0x30])
    }

    @Test(arguments: try WireVector.load())
    func encodesToTheVector(_ v: WireVector) throws {
        let message = try #require(wireCases[v.name])
        #expect(Hex.string(WireCodec.encode(message)) == v.hex)
    }

    @Test(arguments: try WireVector.load())
    func decodesTheVector(_ v: WireVector) throws {
        #expect(try WireCodec.decode(Hex.bytes(v.hex)) == wireCases[v.name])
    }

    @Test func refusesWrongVersionUnknownKindTruncationAndTrailingBytes() throws {
        let good = WireCodec.encode(.release(streamID: 1))
        #expect(throws: WireError(reason: .unsupportedVersion(2))) { try WireCodec.decode([2] + good.dropFirst()) }
        #expect(throws: WireError(reason: .unknownKind(0x7F))) { try WireCodec.decode([1, 0x7F]) }
        #expect(throws: WireError(reason: .truncated)) { try WireCodec.decode(Array(good.dropLast())) }
        #expect(throws: WireError(reason: .invalidField("1 trailing bytes"))) { try WireCodec.decode(good + [0]) }
    }

    @Test func refusesANestedBatchAnOversizedCountAndABrokenEntry() throws {
        let unit = WireCodec.encode(.release(streamID: 7))
        let length = { (b: [UInt8]) in [UInt8(b.count >> 24 & 0xFF), UInt8(b.count >> 16 & 0xFF), UInt8(b.count >> 8 & 0xFF), UInt8(b.count & 0xFF)] }
        let inner: [UInt8] = [1, 0x05, 0, 0, 0, 1] + length(unit) + unit
        #expect(throws: WireError(reason: .invalidField("batch inside a batch"))) {
            try WireCodec.decode([1, 0x05, 0, 0, 0, 1] + length(inner) + inner)
        }
        #expect(throws: WireError(reason: .tooLarge("batch of 16385"))) { try WireCodec.decode([1, 0x05, 0, 0, 0x40, 0x01]) }
        // An entry that claims more bytes than follow, and one whose message has trailing bytes.
        #expect(throws: WireError(reason: .truncated)) { try WireCodec.decode([1, 0x05, 0, 0, 0, 1, 0, 0, 0, 99] + unit) }
        #expect(throws: WireError(reason: .invalidField("1 trailing bytes"))) {
            try WireCodec.decode([1, 0x05, 0, 0, 0, 1] + length(unit + [0]) + unit + [0])
        }
        #expect(try WireCodec.decode([1, 0x05, 0, 0, 0, 1] + length(unit) + unit) == .batch([.release(streamID: 7)]))
    }

    @Test func encodingFlattensANestedBatch() throws {
        let a = WireMessage.release(streamID: 1), b = WireMessage.release(streamID: 2), c = WireMessage.release(streamID: 3)
        #expect(try WireCodec.decode(WireCodec.encode(.batch([a, .batch([b, c])]))) == .batch([a, b, c]))
    }

    @Test func fuzzedBodiesNeverCrash() throws {
        var rng = SeededGenerator(seed: 0x57)
        let seeds = try WireVector.load().map { Hex.bytes($0.hex) }
        for round in 0..<5_000 {
            if let m = try? WireCodec.decode(rng.mutate(seeds[round % seeds.count])) {
                #expect(try WireCodec.decode(WireCodec.encode(m)) == m)
            }
        }
    }
}
