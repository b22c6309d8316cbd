@testable import RTMP
import StorecastTestSupport
import Testing

@Suite struct ChunkCodecTests {
    static let messages: [RTMPMessage] = [
        RTMPMessage(chunkStreamID: 3, timestamp: 0, typeID: 20, messageStreamID: 0, payload: AMF0.encode([.string("connect"), .number(1), .object([("app", .string("live"))])])),
        RTMPMessage(chunkStreamID: 6, timestamp: 40, typeID: 9, messageStreamID: 1, payload: Array(repeating: 0xAB, count: 1000)),
        RTMPMessage(chunkStreamID: 4, timestamp: 0x0100_0000, typeID: 8, messageStreamID: 1, payload: Array(0..<200).map { UInt8($0 & 0xFF) }),
        RTMPMessage(chunkStreamID: 70, timestamp: 7, typeID: 18, messageStreamID: 1, payload: [1, 2, 3]),
        RTMPMessage(chunkStreamID: 400, timestamp: 8, typeID: 9, messageStreamID: 1, payload: []),
    ]

    static func encoded(chunkSize: Int = 128) -> [UInt8] {
        var encoder = ChunkEncoder()
        encoder.setChunkSize(chunkSize)
        return messages.flatMap { encoder.encode($0) }
    }

    static func decodeAll(_ pieces: [[UInt8]], chunkSize: Int = 128) throws -> [RTMPMessage] {
        var decoder = ChunkDecoder()
        var out: [RTMPMessage] = []
        if chunkSize != 128 {
            var enc = ChunkEncoder()
            decoder.feed(enc.encode(.setChunkSize(UInt32(chunkSize))))
            enc.setChunkSize(chunkSize)
            out.append(try #require(try decoder.nextMessage()))
        }
        for piece in pieces {
            decoder.feed(piece)
            while let m = try decoder.nextMessage() { out.append(m) }
        }
        #expect(decoder.bufferedByteCount == 0, "decoder must consume everything")
        return chunkSize != 128 ? Array(out.dropFirst()) : out
    }

    @Test func wholeBuffer() throws {
        #expect(try Self.decodeAll([Self.encoded()]) == Self.messages)
    }

    @Test func oneByteAtATime() throws {
        #expect(try Self.decodeAll(Self.encoded().map { [$0] }) == Self.messages)
    }

    @Test(arguments: [1, 2, 3, 4, 5])
    func randomSplits(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        #expect(try Self.decodeAll(rng.randomSplits(Self.encoded())) == Self.messages)
    }

    @Test func largerChunkSizeAfterSetChunkSize() throws {
        #expect(try Self.decodeAll([Self.encoded(chunkSize: 4096)], chunkSize: 4096) == Self.messages)
    }

    /// Type 1, 2 and 3 headers with deltas, built by hand as librtmp sends them:
    /// fmt 0 (ts 0, length 2), fmt 2 (delta 0x21), fmt 3 (same delta), fmt 1 (delta 0x14, length 1, audio).
    @Test func compressedHeadersAccumulateDeltas() throws {
        let bytes = Hex.bytes("06 000000 000002 09 01000000 aabb") + Hex.bytes("86 000021 ccdd") + Hex.bytes("c6 eeff") + Hex.bytes("46 000014 000001 08 11")
        var d = ChunkDecoder()
        d.feed(bytes)
        var got: [RTMPMessage] = []
        while let m = try d.nextMessage() { got.append(m) }
        #expect(got.map(\.timestamp) == [0, 0x21, 0x42, 0x56])
        #expect(got.map(\.payload) == [[0xAA, 0xBB], [0xCC, 0xDD], [0xEE, 0xFF], [0x11]])
        #expect(got.map(\.typeID) == [9, 9, 9, 8])
        #expect(got.allSatisfy { $0.messageStreamID == 1 })
    }

    @Test func extendedTimestampRepeatsOnContinuationChunks() throws {
        let m = RTMPMessage(chunkStreamID: 5, timestamp: 0x1234_5678, typeID: 9, messageStreamID: 1, payload: Array(repeating: 7, count: 300))
        let bytes = ChunkEncoder().encode(m)
        // header 1 + 11 + 4, then two continuation headers of 1 + 4
        #expect(bytes.count == 16 + 300 + 2 * 5)
        var d = ChunkDecoder()
        d.feed(bytes)
        #expect(try d.nextMessage() == m)
    }

    /// Encoders that omit the extended timestamp on type 3 continuation chunks.
    @Test func extendedTimestampOmittedOnContinuationChunksIsTolerated() throws {
        let payload = (0..<200).map { UInt8($0 & 0x7F) }
        var bytes = Hex.bytes("05 ffffff 0000c8 09 01000000 12345678")  // fmt 0, extended 0x12345678
        bytes += payload[0..<128]
        bytes += [0xC5] + payload[128...]  // fmt 3 without the 4 extended bytes
        var d = ChunkDecoder()
        d.feed(bytes)
        let m = try #require(try d.nextMessage())
        #expect(m.timestamp == 0x1234_5678)
        #expect(m.payload == payload)
    }

    @Test func oversizedMessageIsRefused() {
        var d = ChunkDecoder()
        d.feed(Hex.bytes("03 000000 ffffff 09 01000000"))
        #expect(throws: ChunkDecoderError(reason: .messageTooLarge(0xFFFFFF))) { try d.nextMessage() }
    }

    @Test func continuationWithoutAStartIsRefused() {
        var d = ChunkDecoder()
        d.feed([0xC4, 0x00])
        #expect(throws: ChunkDecoderError(reason: .missingPreviousHeader(chunkStreamID: 4))) { try d.nextMessage() }
    }

    @Test func zeroChunkSizeIsRefused() {
        var d = ChunkDecoder()
        d.feed(ChunkEncoder().encode(RTMPMessage(chunkStreamID: 2, timestamp: 0, typeID: 1, messageStreamID: 0, payload: [0, 0, 0, 0])))
        #expect(throws: ChunkDecoderError(reason: .invalidChunkSize(0))) { try d.nextMessage() }
    }

    @Test func fuzzedChunkStreamsNeverCrash() {
        var rng = SeededGenerator(seed: 77)
        let seed = Self.encoded()
        for round in 0..<3_000 {
            var d = ChunkDecoder()
            let input = round % 4 == 0 ? rng.bytes(Int.random(in: 0...512, using: &rng)) : rng.mutate(seed)
            d.feed(input)
            var count = 0
            while count < 1000, let message = try? d.nextMessage() {
                #expect(message.payload.count <= ChunkDecoder.maximumMessageSize)
                count += 1
            }
        }
    }
}
