import Foundation
import BinaryCoding
@testable import RTMP
import StorecastTestSupport
import Testing

/// One table drives decode and encode (and seeds the fuzz test below).
let amf0Golden: [(name: String, hex: String, value: AMF0Value)] = [
    ("number 1.0", "00 3ff0000000000000", .number(1)),
    ("boolean true", "01 01", .boolean(true)),
    ("string connect", "02 0007 636f6e6e656374", .string("connect")),
    ("null", "05", .null),
    ("undefined", "06", .undefined),
    ("object app=live", "03 0003 617070 02 0004 6c697665 0000 09", .object([("app", .string("live"))])),
    ("ecma array duration", "08 00000001 0008 6475726174696f6e 00 0000000000000000 0000 09", .ecmaArray([("duration", .number(0))])),
    ("strict array", "0a 00000002 05 01 00", .strictArray([.null, .boolean(false)])),
    ("date", "0b 0000000000000000 0000", .date(0, timezone: 0)),
    ("nested object", "03 0001 61 03 0001 62 05 0000 09 0000 09", .object([("a", .object([("b", .null)]))])),
]

@Suite struct AMF0Tests {
    @Test(arguments: amf0Golden.indices)
    func decodesGolden(_ i: Int) throws {
        let c = amf0Golden[i]
        #expect(try AMF0.decodeAll(Hex.bytes(c.hex)) == [c.value], "\(c.name)")
    }

    @Test(arguments: amf0Golden.indices)
    func encodesGolden(_ i: Int) {
        let c = amf0Golden[i]
        #expect(Hex.string(AMF0.encode([c.value])) == Hex.string(Hex.bytes(c.hex)), "\(c.name)")
    }

    @Test func longStringDecodes() throws {
        var bytes: [UInt8] = [0x0C, 0, 0, 0, 3]
        bytes += Array("abc".utf8)
        #expect(try AMF0.decodeAll(bytes) == [.string("abc")])
    }

    @Test func truncatedInputIsAnError() {
        #expect(throws: AMF0Error(reason: .truncated)) { try AMF0.decodeAll(Hex.bytes("02 0007 636f6e")) }
    }

    @Test func unsupportedMarkerIsAnError() {
        #expect(throws: AMF0Error(reason: .unsupportedMarker(0x07))) { try AMF0.decodeAll([0x07, 0x00, 0x01]) }
    }

    @Test func nestingIsCapped() {
        var bytes: [UInt8] = []
        for _ in 0...(AMF0.maximumDepth + 1) { bytes += [0x03, 0x00, 0x01, 0x61] }
        #expect(throws: AMF0Error(reason: .tooDeep)) { try AMF0.decodeAll(bytes) }
    }

    @Test func hugeStrictArrayCountIsRefusedBeforeAllocating() {
        #expect(throws: AMF0Error(reason: .tooManyItems)) { try AMF0.decodeAll([0x0A, 0xFF, 0xFF, 0xFF, 0xFF]) }
    }

    /// Mutations of every golden case: decoding may fail, never crash, and what decodes
    /// re-encodes to something that decodes to the same value.
    @Test func fuzzedInputNeverCrashes() throws {
        var rng = SeededGenerator(seed: 0xA3F0)
        for round in 0..<5_000 {
            let seed = Hex.bytes(amf0Golden[round % amf0Golden.count].hex)
            let input = round % 5 == 0 ? rng.bytes(Int.random(in: 0...64, using: &rng)) : rng.mutate(seed)
            if let values = try? AMF0.decodeAll(input) {
                #expect(try AMF0.decodeAll(AMF0.encode(values)) == values)
            }
        }
    }
}

@Suite struct AMF0FuzzRegressionTests {
    /// fuzz/regressions/amf0: a NaN date broke the decode-encode-decode round trip.
    @Test func nanDateRoundTrips() throws {
        let value = AMF0Value.date(.nan, timezone: 0x0B0B)
        #expect(try AMF0.decodeAll(AMF0.encode([value])) == [value])
    }
}

/// Inputs that broke the AMF0 fuzz target's round trip (fuzz/regressions/amf0/): whatever
/// decodes must encode to bytes that decode to the same values.
@Suite struct AMF0FuzzInputTests {
    @Test func regressionInputsRoundTrip() throws {
        let dir = Fixtures.repositoryRoot().appendingPathComponent("fuzz/regressions/amf0")
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted()
        #expect(!files.isEmpty, "regression inputs present")
        for file in files {
            let bytes = Array(try Data(contentsOf: dir.appendingPathComponent(file)))
            guard let values = try? AMF0.decodeAll(bytes) else { continue }
            let again: [AMF0Value]?
            do { again = try AMF0.decodeAll(AMF0.encode(values)) } catch { again = nil; Issue.record("\(file): re-decoding failed: \(error)") }
            #expect(again == values, "\(file): \(values) became \(String(describing: again))")
        }
    }
}
