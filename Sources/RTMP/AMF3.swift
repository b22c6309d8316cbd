import BinaryCoding

/// AMF3 decoding (AMF3 specification, section 3), for the values a Flash-era or AIR client writes
/// after the AMF0 `avmplus-object-marker` (0x11) in commands and data messages.
///
/// Values map onto ``AMF0Value`` so the session state machine reads one value type:
/// integers and doubles become numbers, XML becomes a string, a dense array becomes a strict array
/// (an array with associative members becomes an ECMA array, the dense items keyed "0", "1", …),
/// objects carry their sealed members then their dynamic ones, a ByteArray or a numeric vector
/// becomes a strict array of numbers, and an object vector a strict array. Externalizable objects
/// and dictionaries need class-specific code on the sender's side and are refused.
public struct AMF3Decoder {
    /// Most values AMF3 references may expand to in one message. A reference copies what it
    /// points to, so without a budget a few hundred bytes could expand exponentially.
    public static let maximumMaterializedValues = 65_536

    /// The traits of one class: sealed member names and whether dynamic members follow.
    private struct Traits {
        var sealed: [String]
        var dynamic: Bool
    }

    private var strings: [String] = []
    private var objects: [AMF0Value] = []
    private var traits: [Traits] = []
    /// Values references may still expand to (``maximumMaterializedValues`` per message).
    public private(set) var budget: Int

    /// A decoder with empty reference tables (every switch from AMF0 starts afresh).
    public init(budget: Int = AMF3Decoder.maximumMaterializedValues) {
        self.budget = budget
    }

    public mutating func decode(_ reader: inout ByteReader, depth: Int = 0) throws -> AMF0Value {
        guard depth <= AMF0.maximumDepth else { throw AMF0Error(reason: .tooDeep) }
        do {
            let marker = try reader.u8()
            switch marker {
            case 0x00: return .undefined
            case 0x01: return .null
            case 0x02: return .boolean(false)
            case 0x03: return .boolean(true)
            case 0x04:
                // A 29-bit two's-complement integer.
                let raw = try Self.u29(&reader)
                return .number(Double(raw & 0x1000_0000 != 0 ? Int32(bitPattern: raw | 0xE000_0000) : Int32(raw)))
            case 0x05: return .number(try reader.f64())
            case 0x06: return .string(try string(&reader))
            case 0x07, 0x0B:  // XMLDocument, XML: a length-prefixed UTF-8 string, by reference too
                return try referenced(&reader, depth: depth) { reader, length in
                    .string(String(decoding: try reader.read(length), as: UTF8.self))
                }
            case 0x08:
                return try referenced(&reader, depth: depth) { reader, _ in .date(try reader.f64(), timezone: 0) }
            case 0x09: return try array(&reader, depth: depth)
            case 0x0A: return try object(&reader, depth: depth)
            case 0x0C:
                return try referenced(&reader, depth: depth) { reader, length in
                    guard length <= AMF0.maximumItems else { throw AMF0Error(reason: .tooManyItems) }
                    return .strictArray(try reader.read(length).map { .number(Double($0)) })
                }
            case 0x0D, 0x0E, 0x0F:
                return try referenced(&reader, depth: depth) { reader, count in
                    guard count <= AMF0.maximumItems else { throw AMF0Error(reason: .tooManyItems) }
                    _ = try reader.u8()  // fixed-length flag
                    return .strictArray(try (0..<count).map { _ in
                        switch marker {
                        case 0x0D: .number(Double(try reader.i32()))
                        case 0x0E: .number(Double(try reader.u32()))
                        default: .number(try reader.f64())
                        }
                    })
                }
            case 0x10:
                let first = try Self.u29(&reader)
                if first & 1 == 0 { return try objectReference(Int(first >> 1), depth: depth) }
                let count = Int(first >> 1)
                guard count <= AMF0.maximumItems else { throw AMF0Error(reason: .tooManyItems) }
                _ = try reader.u8()  // fixed-length flag
                _ = try string(&reader)  // element type name
                let slot = objects.count
                objects.append(.strictArray([]))
                var items: [AMF0Value] = []
                for _ in 0..<count { items.append(try decode(&reader, depth: depth + 1)) }
                objects[slot] = .strictArray(items)
                return objects[slot]
            default:
                throw AMF0Error(reason: .unsupportedMarker(marker))
            }
        } catch is ByteReaderError {
            throw AMF0Error(reason: .truncated)
        }
    }

    /// A variable-length unsigned 29-bit integer: up to three bytes of 7 bits, then one of 8.
    static func u29(_ reader: inout ByteReader) throws -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<3 {
            let byte = try reader.u8()
            value = value << 7 | UInt32(byte & 0x7F)
            if byte & 0x80 == 0 { return value }
        }
        return value << 8 | UInt32(try reader.u8())
    }

    private mutating func string(_ reader: inout ByteReader) throws -> String {
        let header = try Self.u29(&reader)
        if header & 1 == 0 {
            let index = Int(header >> 1)
            guard index < strings.count else { throw AMF0Error(reason: .badReference) }
            return strings[index]
        }
        let value = String(decoding: try reader.read(Int(header >> 1)), as: UTF8.self)
        if !value.isEmpty { strings.append(value) }  // the empty string is never referenced
        return value
    }

    /// A value that is either a reference into the object table or inline with a length/count.
    private mutating func referenced(_ reader: inout ByteReader, depth: Int, _ inline: (inout ByteReader, Int) throws -> AMF0Value) throws -> AMF0Value {
        let header = try Self.u29(&reader)
        if header & 1 == 0 { return try objectReference(Int(header >> 1), depth: depth) }
        let value = try inline(&reader, Int(header >> 1))
        objects.append(value)
        return value
    }

    /// A referenced object, checked as if it were written out here: within the depth limit at
    /// this position, and within the expansion budget.
    private mutating func objectReference(_ index: Int, depth: Int) throws -> AMF0Value {
        guard index < objects.count else { throw AMF0Error(reason: .badReference) }
        let value = objects[index]
        let size = Self.measure(value)
        guard depth + size.height <= AMF0.maximumDepth else { throw AMF0Error(reason: .tooDeep) }
        budget -= size.count
        guard budget >= 0 else { throw AMF0Error(reason: .tooManyItems) }
        return value
    }

    /// Nesting below a value and the number of values in it.
    static func measure(_ value: AMF0Value) -> (height: Int, count: Int) {
        let children: [AMF0Value]
        switch value {
        case .object(let props), .ecmaArray(let props): children = props.map(\.1)
        case .strictArray(let items): children = items
        default: return (0, 1)
        }
        var height = 0, count = 1
        for child in children {
            let m = measure(child)
            height = max(height, m.height + 1)
            count += m.count
        }
        return (height, count)
    }

    private mutating func array(_ reader: inout ByteReader, depth: Int) throws -> AMF0Value {
        let header = try Self.u29(&reader)
        if header & 1 == 0 { return try objectReference(Int(header >> 1), depth: depth) }
        let denseCount = Int(header >> 1)
        guard denseCount <= AMF0.maximumItems else { throw AMF0Error(reason: .tooManyItems) }
        let slot = objects.count
        objects.append(.strictArray([]))  // the slot exists before members can refer to it
        var associative: [(String, AMF0Value)] = []
        while true {
            let key = try string(&reader)
            if key.isEmpty { break }
            guard denseCount + associative.count < AMF0.maximumItems else { throw AMF0Error(reason: .tooManyItems) }
            associative.append((key, try decode(&reader, depth: depth + 1)))
        }
        var dense: [AMF0Value] = []
        for _ in 0..<denseCount { dense.append(try decode(&reader, depth: depth + 1)) }
        let value: AMF0Value = associative.isEmpty
            ? .strictArray(dense)
            : .ecmaArray(dense.enumerated().map { (String($0.offset), $0.element) } + associative)
        objects[slot] = value
        return value
    }

    private mutating func object(_ reader: inout ByteReader, depth: Int) throws -> AMF0Value {
        let header = try Self.u29(&reader)
        if header & 1 == 0 { return try objectReference(Int(header >> 1), depth: depth) }
        let classTraits: Traits
        if header & 2 == 0 {
            let index = Int(header >> 2)
            guard index < traits.count else { throw AMF0Error(reason: .badReference) }
            classTraits = traits[index]
        } else {
            // Externalizable objects carry a class-defined body only the class can read.
            guard header & 4 == 0 else { throw AMF0Error(reason: .unsupportedMarker(0x0A)) }
            let sealedCount = Int(header >> 4)
            guard sealedCount <= AMF0.maximumItems else { throw AMF0Error(reason: .tooManyItems) }
            _ = try string(&reader)  // class name
            var names: [String] = []
            for _ in 0..<sealedCount { names.append(try string(&reader)) }
            classTraits = Traits(sealed: names, dynamic: header & 8 != 0)
            traits.append(classTraits)
        }
        let slot = objects.count
        objects.append(.object([]))
        var members: [(String, AMF0Value)] = []
        for name in classTraits.sealed { members.append((name, try decode(&reader, depth: depth + 1))) }
        if classTraits.dynamic {
            while true {
                let key = try string(&reader)
                if key.isEmpty { break }
                guard members.count < AMF0.maximumItems else { throw AMF0Error(reason: .tooManyItems) }
                members.append((key, try decode(&reader, depth: depth + 1)))
            }
        }
        objects[slot] = .object(members)
        return objects[slot]
    }
}
