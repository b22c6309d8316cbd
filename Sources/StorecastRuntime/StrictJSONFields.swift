/// A JSON object field the endpoint does not take, or a `null` where a value is required: a
/// typo such as `{"recordng": true}` is refused with the field named, not silently ignored.
public struct JSONFieldProblem: Error, Sendable, Equatable {
    public var field: String
    public var message: String
}

/// Checks a request body's object keys against what its type declares (`CodingKeys` that are
/// `CaseIterable`); `nullable` names the fields that may be `null`.
public enum StrictJSONFields {
    struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    public static func check<Keys: CodingKey & CaseIterable>(_ decoder: any Decoder, _ keys: Keys.Type, nullable: Set<String> = []) throws {
        let object = try decoder.container(keyedBy: AnyKey.self)
        let known = Keys.allCases.map(\.stringValue)
        for key in object.allKeys.sorted(by: { $0.stringValue < $1.stringValue }) {
            guard known.contains(key.stringValue) else {
                throw JSONFieldProblem(field: key.stringValue, message: "unknown field \(key.stringValue); this endpoint takes \(known.joined(separator: ", "))")
            }
            if !nullable.contains(key.stringValue), try object.decodeNil(forKey: key) {
                throw JSONFieldProblem(field: key.stringValue, message: "\(key.stringValue) cannot be null")
            }
        }
    }
}
