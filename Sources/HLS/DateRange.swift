/// An EXT-X-DATERANGE tag (RFC 8216bis 4.4.5.1): a range of program date-time with attributes
/// for the client, here a product card shown in step with the video. Pure.
public struct DateRange: Equatable, Sendable {
    /// A client attribute: `X-` and upper-case letters, digits and `-`, with a quoted-string value.
    public struct Attribute: Equatable, Sendable {
        public var name: String
        public var value: String
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    public var id: String
    public var classValue: String
    /// Seconds since 1970.
    public var startDate: Double
    /// Seconds; nil with `endOnNext`: the range ends where the next one of its class starts.
    public var duration: Double?
    public var attributes: [Attribute]

    public init(id: String, classValue: String, startDate: Double, duration: Double?, attributes: [Attribute]) {
        self.id = id
        self.classValue = classValue
        self.startDate = startDate
        self.duration = duration
        self.attributes = attributes
    }

    /// Where the range ends, given the ranges that follow it in the playlist (nil: open).
    public func endDate(among ranges: [DateRange]) -> Double? {
        if let duration { return startDate + duration }
        return ranges.filter { $0.classValue == classValue && $0.startDate > startDate }.map(\.startDate).min()
    }

    public func render() -> String {
        var attrs = ["ID=\(Self.quoted(id))", "CLASS=\(Self.quoted(classValue))", "START-DATE=\"\(ProgramDateTime.format(startDate))\""]
        if let duration {
            attrs.append("DURATION=\(formatDecimal(max(0, duration), places: 3))")
        } else {
            attrs.append("END-ON-NEXT=YES")
        }
        for a in attributes where Self.isClientAttributeName(a.name) {
            attrs.append("\(a.name)=\(Self.quoted(a.value))")
        }
        return "#EXT-X-DATERANGE:" + attrs.joined(separator: ",")
    }

    /// `X-` followed by upper-case letters, digits and `-` (section 4.4.5.1).
    public static func isClientAttributeName(_ name: String) -> Bool {
        name.hasPrefix("X-") && name.count > 2 && name.utf8.allSatisfy { ($0 >= 65 && $0 <= 90) || ($0 >= 48 && $0 <= 57) || $0 == 45 }
    }

    /// A quoted-string (section 4.2): no double quote, carriage return or line feed inside, so
    /// any that reached here are left out.
    static func quoted(_ s: String) -> String {
        "\"" + String(s.unicodeScalars.filter { $0 != "\"" && $0 != "\r" && $0 != "\n" }.map(Character.init)) + "\""
    }
}
