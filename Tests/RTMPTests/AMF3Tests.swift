import BinaryCoding
import Foundation
@testable import RTMP
import StorecastTestSupport
import Testing

/// AMF3 values behind the AMF0 avmplus-object-marker (0x11), hand-encoded from the AMF3
/// specification's rules: U29 integers, inline vs reference headers, traits and their references.
let amf3Golden: [(name: String, hex: String, value: AMF0Value)] = [
    ("undefined", "11 00", .undefined),
    ("null", "11 01", .null),
    ("false", "11 02", .boolean(false)),
    ("true", "11 03", .boolean(true)),
    ("integer 127, one U29 byte", "11 04 7f", .number(127)),
    ("integer 128, two U29 bytes", "11 04 8100", .number(128)),
    ("integer -1, four U29 bytes sign-extended from 29 bits", "11 04 ffffffff", .number(-1)),
    ("integer minimum", "11 04 c0808000", .number(-268_435_456)),
    ("double 1.0", "11 05 3ff0000000000000", .number(1)),
    ("string hi", "11 06 05 6869", .string("hi")),
    ("empty string", "11 06 01", .string("")),
    ("XML", "11 0b 09 3c612f3e", .string("<a/>")),
    ("date", "11 08 01 0000000000000000", .date(0, timezone: 0)),
    ("dynamic anonymous object", "11 0a 0b 01 07 617070 06 09 6c697665 01", .object([("app", .string("live"))])),
    ("sealed typed object", "11 0a 23 07 436667 03 61 03 62 04 01 04 02", .object([("a", .number(1)), ("b", .number(2))])),
    ("string reference", "11 0a 0b 01 03 61 06 03 78 03 62 06 02 01", .object([("a", .string("x")), ("b", .string("x"))])),
    ("dense array", "11 09 05 01 04 01 04 02", .strictArray([.number(1), .number(2)])),
    ("array with associative part", "11 09 03 03 6b 06 03 76 01 04 07", .ecmaArray([("0", .number(7)), ("k", .string("v"))])),
    ("object reference", "11 09 05 01 0a 0b 01 01 0a 02", .strictArray([.object([]), .object([])])),
    ("traits reference", "11 09 05 01 0a 13 03 41 03 78 04 01 0a 01 04 02", .strictArray([.object([("x", .number(1))]), .object([("x", .number(2))])])),
    ("ByteArray", "11 0c 05 0102", .strictArray([.number(1), .number(2)])),
    ("int vector", "11 0d 05 00 ffffffff 00000002", .strictArray([.number(-1), .number(2)])),
    ("object vector", "11 10 03 00 01 04 05", .strictArray([.number(5)])),
]

let amf3Refused: [(name: String, hex: String, error: AMF0Error)] = [
    ("externalizable object", "11 0a 07 07 436667", AMF0Error(reason: .unsupportedMarker(0x0A))),
    ("dictionary", "11 11 03 00", AMF0Error(reason: .unsupportedMarker(0x11))),
    ("string reference before any string", "11 06 02", AMF0Error(reason: .badReference)),
    ("object reference before any object", "11 0a 00", AMF0Error(reason: .badReference)),
    ("traits reference before any traits", "11 0a 01", AMF0Error(reason: .badReference)),
    ("truncated string", "11 06 05 68", AMF0Error(reason: .truncated)),
    ("truncated U29", "11 04 ff", AMF0Error(reason: .truncated)),
    ("huge dense array", "11 09 ffffffff", AMF0Error(reason: .tooManyItems)),
]

@Suite struct AMF3Tests {
    @Test(arguments: amf3Golden.indices)
    func decodesGolden(_ i: Int) throws {
        let c = amf3Golden[i]
        #expect(try AMF0.decodeAll(Hex.bytes(c.hex)) == [c.value], "\(c.name)")
    }

    @Test(arguments: amf3Refused.indices)
    func refusesClearly(_ i: Int) {
        let c = amf3Refused[i]
        #expect(throws: c.error, "\(c.name)") { try AMF0.decodeAll(Hex.bytes(c.hex)) }
    }

    @Test func nestingIsCapped() {
        // Arrays of one element, nested deeper than AMF0.maximumDepth.
        var bytes: [UInt8] = [0x11]
        for _ in 0...(AMF0.maximumDepth + 1) { bytes += [0x09, 0x03, 0x01] }
        #expect(throws: AMF0Error(reason: .tooDeep)) { try AMF0.decodeAll(bytes) }
    }

    /// A Flash-era publisher (FMLE with objectEncoding 3) sends connect as an AMF3 command message
    /// whose command object is AMF3: the session reads app, tcUrl and flashVer from it and answers
    /// with the object encoding it asked for.
    @Test func amf3ConnectObjectIsRead() throws {
        var payload: [UInt8] = [0x00]  // AMF3 command format byte
        payload += AMF0.encode([.string("connect"), .number(1)])
        payload += Hex.bytes("11 0a 0b 01")  // dynamic anonymous object
        for (key, value) in [("app", "live"), ("tcUrl", "rtmp://h/live"), ("flashVer", "FMLE/3.0")] {
            payload += [UInt8(key.utf8.count << 1 | 1)] + Array(key.utf8)
            payload += [0x06, UInt8(value.utf8.count << 1 | 1)] + Array(value.utf8)
        }
        payload += [UInt8("objectEncoding".utf8.count << 1 | 1)] + Array("objectEncoding".utf8) + [0x04, 0x03]
        payload += [0x01]
        var s = ServerSessionStateMachine()
        let connect = s.received(RTMPMessage(chunkStreamID: 3, timestamp: 0, typeID: 17, messageStreamID: 0, payload: payload))
        guard case .send(let replies) = try #require(connect.first) else { Issue.record("no reply"); return }
        let result = try #require(replies.last { $0.type == .amf0Command })
        let values = try AMF0.decodeAll(result.payload)
        #expect(values.first == .string("_result"))
        #expect(values.last?["code"] == .string("NetConnection.Connect.Success"))
        #expect(values.last?["objectEncoding"] == .number(3))
        _ = s.received(.command([.string("createStream"), .number(2), .null], streamID: 0))
        let publish = s.received(.command([.string("publish"), .number(3), .null, .string("KEY"), .string("live")], streamID: 1))
        #expect(publish == [.authorize(PublishRequest(app: "live", streamKey: "KEY", query: [:], publishType: "live", tcUrl: "rtmp://h/live", flashVer: "FMLE/3.0"))])
    }

    /// `@setDataFrame` sent as an AMF3 data message (type 15) reaches the session as metadata.
    @Test func amf3DataMessageIsMetadata() {
        var s = ServerSessionStateMachine()
        _ = ServerSessionStateMachineTests.connectAndPublish(&s)
        _ = s.publishAuthorized()
        var payload: [UInt8] = [0x00] + AMF0.encode([.string("@setDataFrame"), .string("onMetaData")])
        payload += Hex.bytes("11 0a 0b 01 0b 7769647468 04 8a00 01")  // {width: 1280}
        let actions = s.received(RTMPMessage(chunkStreamID: 4, timestamp: 0, typeID: 15, messageStreamID: 1, payload: payload))
        #expect(actions == [.metadata([.string("@setDataFrame"), .string("onMetaData"), .object([("width", .number(1280))])])])
    }

    /// Mutations of every golden case decode or fail with an AMF0Error, never crash.
    @Test func fuzzedInputNeverCrashes() {
        var rng = SeededGenerator(seed: 0xA3F3)
        var decoded = 0
        for _ in 0..<4000 {
            var bytes = Hex.bytes(amf3Golden[Int.random(in: 0..<amf3Golden.count, using: &rng)].hex)
            for _ in 0..<Int.random(in: 1...3, using: &rng) {
                let at = Int.random(in: 1..<bytes.count, using: &rng)
                bytes[at] = UInt8.random(in: 0...255, using: &rng)
            }
            do { _ = try AMF0.decodeAll(bytes); decoded += 1 } catch is AMF0Error {} catch { Issue.record("unexpected \(error)") }
        }
        #expect(decoded > 100, "mutations should still decode sometimes; only \(decoded) did")
    }
}

@Suite struct AMF3FuzzRegressionTests {
    /// Every input libFuzzer kept for the amf0 target (AMF3 is reached through it) decodes or
    /// fails cleanly, and what decodes survives the AMF0 round trip. The AMF3 one: a reference
    /// to an object nested 10 deep, placed 10 deep, wrote out 20 levels, past the AMF0 limit.
    @Test func keptInputsRoundTrip() throws {
        let directory = Fixtures.repositoryRoot().appendingPathComponent("fuzz/regressions/amf0")
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        #expect(!names.isEmpty)
        for name in names {
            let bytes = Array(try Data(contentsOf: directory.appendingPathComponent(name)))
            guard let values = try? AMF0.decodeAll(bytes) else { continue }
            do {
                #expect(try AMF0.decodeAll(AMF0.encode(values)) == values, "\(name) survives the round trip")
            } catch {
                Issue.record("\(name): what decoded does not decode again: \(error)")
            }
        }
    }
}

@Suite struct AMF3ExpansionTests {
    /// Level 0 is 16 nulls; level k is 16 references to level k-1. A few hundred bytes would
    /// write out to 16^5 values; the budget stops it at level 3.
    @Test func referencesCannotExpandWithoutBound() {
        var bytes: [UInt8] = [0x11, 0x09, 0x0D, 0x01]  // an array of 6 items (object 0)
        bytes += [0x09, 0x21, 0x01] + Array(repeating: 0x01, count: 16)  // level 0 (object 1)
        for level in 1...5 {
            bytes += [0x09, 0x21, 0x01] + Array(repeating: [0x09, UInt8(level << 1)], count: 16).flatMap { $0 }
        }
        #expect(throws: AMF0Error(reason: .tooManyItems)) { try AMF0.decodeAll(bytes) }
        // The same shape two levels shallower is fine: 1 + 17 + 16 * 17 + 16 * 273 values.
        var small: [UInt8] = [0x11, 0x09, 0x07, 0x01] + [0x09, 0x21, 0x01] + Array(repeating: 0x01, count: 16)
        for level in 1...2 { small += [0x09, 0x21, 0x01] + Array(repeating: [0x09, UInt8(level << 1)], count: 16).flatMap { $0 } }
        #expect((try? AMF0.decodeAll(small))?.count == 1)
    }

    /// A reference counts as deep as what it points to, written out where it stands.
    @Test func aReferenceIsAsDeepAsWhatItPointsTo() {
        var bytes: [UInt8] = [0x11, 0x09, 0x05, 0x01]  // [X, Y] (object 0)
        bytes += Array(repeating: [0x09, 0x03, 0x01], count: 10).flatMap { $0 } + [0x01]  // X: 10 arrays around null (object 1)
        bytes += Array(repeating: [0x09, 0x03, 0x01], count: 10).flatMap { $0 } + [0x09, 0x02]  // Y: 10 arrays around X
        #expect(throws: AMF0Error(reason: .tooDeep)) { try AMF0.decodeAll(bytes) }
    }
}
