import StorecastTestSupport
@testable import StorecastWire
import Testing

@Suite struct WireBatchWriterTests {
    static let unit = WireMessage.accessUnit(AccessUnit(streamID: 9, trackID: 1, flags: 1, sequence: 3, dts: 120, compositionOffset: 33, data: Array(0..<200)))
    static let audio = WireMessage.accessUnit(AccessUnit(streamID: 9, trackID: 2, flags: 1, sequence: 4, dts: 121, compositionOffset: 0, data: [0x21, 0x10]))
    static let end = WireMessage.streamEnd(StreamEnd(streamID: 9, reason: "unpublished"))

    /// What goes out for each number of messages added: nothing, the message itself, a batch.
    @Test(arguments: [
        ([WireMessage](), nil as WireMessage?),
        ([unit], unit),
        ([unit, audio], .batch([unit, audio])),
        ([unit, audio, end], .batch([unit, audio, end])),
        ([.batch([unit, audio]), end], .batch([unit, audio, end])),
    ])
    func sendsNothingTheMessageOrABatch(_ added: [WireMessage], _ expected: WireMessage?) throws {
        var writer = WireBatchWriter(capacity: 16)
        for m in added { writer.append(m) }
        let body = writer.encoded()
        #expect(body.map { try? WireCodec.decode($0) } ?? nil == expected)
        // Byte for byte what encoding the expected message on its own gives.
        #expect(body == expected.map(WireCodec.encode))
        #expect(writer.count == (expected.map { if case .batch(let m) = $0 { m.count } else { 1 } } ?? 0))
    }

    /// A turn's messages are split into batches a receiver accepts: by count and by bytes, in
    /// order; one message larger than the budget goes alone.
    @Test(arguments: [
        // (messages of these payload sizes, maximum count, maximum bytes) → messages per body
        ([10, 10, 10, 10, 10, 10, 10], 3, 1 << 20, [3, 3, 1]),
        ([200, 200, 200], 100, 300, [1, 1, 1]),
        ([10, 1_000, 10, 10], 100, 300, [1, 1, 2]),
        ([10, 10], 100, 1 << 20, [2]),
        ([10], 100, 1 << 20, [1]),
    ])
    func aQueueSplitsWithinTheLimits(_ sizes: [Int], _ maximumCount: Int, _ maximumBytes: Int, _ perBody: [Int]) throws {
        var queue = WireBatchQueue(capacity: 16, maximumCount: maximumCount, maximumBytes: maximumBytes)
        let messages = sizes.enumerated().map { i, n in
            WireMessage.accessUnit(AccessUnit(streamID: 1, trackID: 1, flags: 0, sequence: UInt64(i), dts: Int64(i), compositionOffset: 0, data: Array(repeating: 7, count: n)))
        }
        for m in messages { queue.append(m) }
        let decoded = try queue.encoded().map { try WireCodec.decode($0) }
        let counts = decoded.map { if case .batch(let inner) = $0 { inner.count } else { 1 } }
        #expect(counts == perBody)
        let flat = decoded.flatMap { if case .batch(let inner) = $0 { inner } else { [$0] } }
        #expect(flat == messages)
        #expect(queue.count == messages.count)
    }

    @Test func aTurnOfMoreMessagesThanAReceiverTakesGoesAsTwoBatches() throws {
        var queue = WireBatchQueue()
        for i in 0...WireCodec.maximumBatch { queue.append(.release(streamID: Int64(i))) }
        let bodies = queue.encoded()
        #expect(bodies.count == 2)
        let first = try WireCodec.decode(bodies[0]), second = try WireCodec.decode(bodies[1])
        #expect(first == .batch((0..<WireCodec.maximumBatch).map { .release(streamID: Int64($0)) }))
        #expect(second == .release(streamID: Int64(WireCodec.maximumBatch)))
    }

    /// A receiver keeps the good entries of a batch with a bad one (and says which failed); the
    /// strict decoder refuses the whole batch.
    @Test func aBadEntryCostsOnlyItself() throws {
        let good = WireCodec.encode(.release(streamID: 1)), bad: [UInt8] = [1, 0x7F], alsoGood = WireCodec.encode(.release(streamID: 2))
        let length = { (b: [UInt8]) in [UInt8(0), 0, UInt8(b.count >> 8), UInt8(b.count & 0xFF)] }
        let body: [UInt8] = [1, 0x05, 0, 0, 0, 3] + length(good) + good + length(bad) + bad + length(alsoGood) + alsoGood
        #expect(throws: WireError(reason: .unknownKind(0x7F))) { try WireCodec.decode(body) }
        var skipped: [WireError] = []
        #expect(try WireCodec.decode(body, skipping: &skipped) == .batch([.release(streamID: 1), .release(streamID: 2)]))
        #expect(skipped == [WireError(reason: .unknownKind(0x7F))])
        // Broken framing (an entry longer than what follows) still refuses the whole message.
        #expect(throws: WireError(reason: .truncated)) { try WireCodec.decode([1, 0x05, 0, 0, 0, 1, 0, 0, 0, 9, 1], skipping: &skipped) }
    }

    @Test func aBatchOfManyUnitsKeepsTheirOrderAndBytes() throws {
        var writer = WireBatchWriter(capacity: 64)
        let units = (0..<1_000).map { i in
            WireMessage.accessUnit(AccessUnit(streamID: Int64(i % 7), trackID: UInt8(1 + i % 2), flags: UInt8(i % 30 == 0 ? 1 : 0), sequence: UInt64(i), dts: Int64(i * 33), compositionOffset: Int32(i % 3) * 33, data: Array(repeating: UInt8(i & 0xFF), count: i % 97)))
        }
        for u in units { writer.append(u) }
        #expect(try WireCodec.decode(try #require(writer.encoded())) == .batch(units))
        #expect(writer.byteCount == WireCodec.encode(.batch(units)).count)
    }
}
