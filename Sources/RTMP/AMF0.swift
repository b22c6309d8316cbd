import BinaryCoding

/// An AMF0 value (AMF0 specification, section 2). Object properties keep their wire order.
public enum AMF0Value: Equatable, Sendable {
    case number(Double)
    case boolean(Bool)
    case string(String)
    case object([(String, AMF0Value)])
    case null
    case undefined
    case ecmaArray([(String, AMF0Value)])
    case strictArray([AMF0Value])
    case date(Double, timezone: Int16)

    public static func == (lhs: AMF0Value, rhs: AMF0Value) -> Bool {
        switch (lhs, rhs) {
        case let (.number(a), .number(b)): a == b || (a.isNaN && b.isNaN)
        case let (.boolean(a), .boolean(b)): a == b
        case let (.string(a), .string(b)): a == b
        case let (.object(a), .object(b)), let (.ecmaArray(a), .ecmaArray(b)):
            a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        case (.null, .null), (.undefined, .undefined): true
        case let (.strictArray(a), .strictArray(b)): a == b
        case let (.date(a, ta), .date(b, tb)): (a == b || (a.isNaN && b.isNaN)) && ta == tb
        default: false
        }
    }

    /// The property `key` of an object or ECMA array.
    public subscript(key: String) -> AMF0Value? {
        switch self {
        case .object(let props), .ecmaArray(let props): props.first { $0.0 == key }?.1
        default: nil
        }
    }

    public var stringValue: String? { if case .string(let s) = self { s } else { nil } }
    public var numberValue: Double? { if case .number(let n) = self { n } else { nil } }
}

public struct AMF0Error: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Reason: Equatable, Sendable {
        case truncated
        case unsupportedMarker(UInt8)
        case tooDeep
        case tooManyItems
        /// An AMF3 string, object or traits reference to an entry not yet seen.
        case badReference
    }
    public let reason: Reason
    public init(reason: Reason) { self.reason = reason }
    public var description: String { "AMF0: \(reason)" }
}

/// AMF0 decoding and encoding. Pure; limits are named so hostile input cannot exhaust memory.
public enum AMF0 {
    /// Deepest nesting of objects and arrays accepted.
    public static let maximumDepth = 16
    /// Most properties or elements in one object or array.
    public static let maximumItems = 4096

    public static func decodeAll(_ bytes: [UInt8]) throws -> [AMF0Value] {
        var reader = ByteReader(bytes)
        var values: [AMF0Value] = []
        var budget = AMF3Decoder.maximumMaterializedValues  // shared by every AMF3 value of the message
        while !reader.isAtEnd {
            values.append(try decode(&reader, depth: 0, budget: &budget))
        }
        return values
    }

    public static func decode(_ reader: inout ByteReader, depth: Int = 0) throws -> AMF0Value {
        var budget = AMF3Decoder.maximumMaterializedValues
        return try decode(&reader, depth: depth, budget: &budget)
    }

    /// `budget`: how many values AMF3 references may still expand to in this message.
    static func decode(_ reader: inout ByteReader, depth: Int, budget: inout Int) throws -> AMF0Value {
        guard depth <= maximumDepth else { throw AMF0Error(reason: .tooDeep) }
        do {
            let marker = try reader.u8()
            switch marker {
            case 0x00: return .number(try reader.f64())
            case 0x01: return .boolean(try reader.u8() != 0)
            case 0x02: return .string(try reader.string16())
            case 0x03: return .object(try properties(&reader, depth: depth, budget: &budget))
            case 0x05: return .null
            case 0x06: return .undefined
            case 0x08:
                _ = try reader.u32()  // count hint; real clients get it wrong, the end marker rules
                return .ecmaArray(try properties(&reader, depth: depth, budget: &budget))
            case 0x0A:
                let count = Int(try reader.u32())
                guard count <= maximumItems else { throw AMF0Error(reason: .tooManyItems) }
                var items: [AMF0Value] = []
                for _ in 0..<count { items.append(try decode(&reader, depth: depth + 1, budget: &budget)) }
                return .strictArray(items)
            case 0x0B:
                let ms = try reader.f64()
                return .date(ms, timezone: Int16(bitPattern: try reader.u16()))
            case 0x0C:
                let n = Int(try reader.u32())
                return .string(String(decoding: try reader.read(n), as: UTF8.self))
            case 0x11:
                // avmplus-object-marker: the next value is AMF3.
                var amf3 = AMF3Decoder(budget: budget)
                defer { budget = amf3.budget }
                let value = try amf3.decode(&reader, depth: depth)
                // The materialized tree, references expanded, within the same limit as AMF0's own
                // (a fuzzed input got deeper, so its AMF0 re-encoding did not decode).
                guard depth + AMF3Decoder.measure(value).height <= maximumDepth else { throw AMF0Error(reason: .tooDeep) }
                return value
            default:
                throw AMF0Error(reason: .unsupportedMarker(marker))
            }
        } catch is ByteReaderError {
            throw AMF0Error(reason: .truncated)
        }
    }

    private static func properties(_ reader: inout ByteReader, depth: Int, budget: inout Int) throws -> [(String, AMF0Value)] {
        var props: [(String, AMF0Value)] = []
        while true {
            let key = try reader.string16()
            if key.isEmpty, try reader.peekU8() == 0x09 {
                _ = try reader.u8()
                return props
            }
            guard props.count < maximumItems else { throw AMF0Error(reason: .tooManyItems) }
            props.append((key, try decode(&reader, depth: depth + 1, budget: &budget)))
        }
    }

    public static func encode(_ values: [AMF0Value]) -> [UInt8] {
        var w = ByteWriter()
        for v in values { encode(v, into: &w) }
        return w.bytes
    }

    public static func encode(_ value: AMF0Value, into w: inout ByteWriter) {
        switch value {
        case .number(let n): w.u8(0x00); w.f64(n)
        case .boolean(let b): w.u8(0x01); w.u8(b ? 1 : 0)
        case .string(let s):
            let utf8 = Array(s.utf8)
            if utf8.count > 0xFFFF { w.u8(0x0C); w.u32(UInt32(utf8.count)) } else { w.u8(0x02); w.u16(UInt16(utf8.count)) }
            w.append(utf8)
        case .object(let props): w.u8(0x03); encodeProperties(props, into: &w)
        case .null: w.u8(0x05)
        case .undefined: w.u8(0x06)
        case .ecmaArray(let props): w.u8(0x08); w.u32(UInt32(props.count)); encodeProperties(props, into: &w)
        case .strictArray(let items):
            w.u8(0x0A); w.u32(UInt32(items.count))
            for item in items { encode(item, into: &w) }
        case .date(let ms, let tz): w.u8(0x0B); w.f64(ms); w.u16(UInt16(bitPattern: tz))
        }
    }

    private static func encodeProperties(_ props: [(String, AMF0Value)], into w: inout ByteWriter) {
        for (k, v) in props { w.string16(k); encode(v, into: &w) }
        w.u16(0); w.u8(0x09)
    }
}
