/// An ID3v2.4 tag (id3.org, "ID3 tag version 2.4.0 - Main Structure") holding `TXXX` frames:
/// user-defined text, a description and a value, in UTF-8. The payload of an ID3 ``EventMessage``.
/// Pure.
public enum ID3Tag {
    /// One `TXXX` frame.
    public struct Text: Equatable, Sendable {
        public var description: String
        public var value: String
        public init(description: String, value: String) {
            self.description = description
            self.value = value
        }
    }

    /// The largest tag a 28-bit synchsafe size can state.
    public static let maximumSize = (1 << 28) - 1

    /// The tag, or nil when it would not fit a synchsafe size. A null inside a description would
    /// end it early, so nulls are left out of descriptions.
    public static func make(_ frames: [Text]) -> [UInt8]? {
        var body: [UInt8] = []
        for frame in frames {
            // Encoding 3 (UTF-8), the description ended by a null, then the value.
            let content = [3] + Array(frame.description.utf8.filter { $0 != 0 }) + [0] + Array(frame.value.utf8)
            guard content.count <= maximumSize else { return nil }
            body += Array("TXXX".utf8) + synchsafe(content.count) + [0, 0] + content
        }
        guard body.count <= maximumSize else { return nil }
        // "ID3", version 4.0, no flags, then the size of everything after the 10-byte header.
        return Array("ID3".utf8) + [4, 0, 0] + synchsafe(body.count) + body
    }

    /// A 28-bit integer in four bytes of 7 bits each (section 6.2).
    static func synchsafe(_ n: Int) -> [UInt8] {
        [UInt8((n >> 21) & 0x7F), UInt8((n >> 14) & 0x7F), UInt8((n >> 7) & 0x7F), UInt8(n & 0x7F)]
    }
}
