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
