/// The one rule for every name that may become part of a URL or a file path: tenant and stream
/// slugs, rendition and rung names (the same rule as the database's CHECK constraints).
/// 1-63 characters of `a-z`, `0-9` and `-`, starting with a letter or digit: no `/`, no `.`,
/// no `..`, nothing a filesystem or a URL treats specially.
public enum Slug {
    public static let maximumLength = 63

    public static func isValid<S: StringProtocol>(_ name: S) -> Bool {
        let bytes = name.utf8
        guard let first = bytes.first, bytes.count <= maximumLength, isAlphanumeric(first) else { return false }
        return bytes.allSatisfy { isAlphanumeric($0) || $0 == UInt8(ascii: "-") }
    }

    /// Why a name was refused, for logs and API errors.
    public static let rule = "1-63 characters of a-z, 0-9 and '-', starting with a letter or digit"

    private static func isAlphanumeric(_ b: UInt8) -> Bool {
        (b >= UInt8(ascii: "a") && b <= UInt8(ascii: "z")) || (b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9"))
    }
}
