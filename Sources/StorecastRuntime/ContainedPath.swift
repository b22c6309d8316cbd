/// The one way Storecast turns names into a file path: `root` and components, refused unless the
/// result stays under `root`. Every directory and file the services write or delete (DVR
/// segments, recordings) is built here, so a name from the wire never reaches the filesystem
/// unchecked. Lexical only (symbolic links under the root are the operator's to trust).
public enum ContainedPath {
    public struct Refused: Error, Equatable, CustomStringConvertible {
        public let component: String
        public var description: String {
            "path component \"\(component.prefix(80))\" refused: 1-128 characters of A-Z, a-z, 0-9, '.', '_' and '-', not starting with '.'"
        }
    }

    public static let maximumComponentLength = 128

    /// `root/c1/c2/…`. `root` is used as given (callers standardize it once); each component must
    /// be one plain name: no separator, no NUL, no leading dot (so no `.` or `..`), nothing empty.
    public static func join(_ root: String, _ components: [String]) throws -> String {
        var path = root.hasSuffix("/") && root.count > 1 ? String(root.dropLast()) : root
        for component in components {
            guard isPlainName(component) else { throw Refused(component: component) }
            path += "/" + component
        }
        return path
    }

    /// A stream key `tenant/stream` (``PackageStore``'s) as its two components.
    public static func join(_ root: String, streamKey: String, _ rest: [String] = []) throws -> String {
        let parts = streamKey.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 2 else { throw Refused(component: streamKey) }
        return try join(root, parts + rest)
    }

    static func isPlainName(_ name: String) -> Bool {
        let bytes = name.utf8
        guard let first = bytes.first, first != UInt8(ascii: "."), bytes.count <= maximumComponentLength else { return false }
        return bytes.allSatisfy { b in
            (b >= UInt8(ascii: "a") && b <= UInt8(ascii: "z")) || (b >= UInt8(ascii: "A") && b <= UInt8(ascii: "Z"))
                || (b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9")) || b == UInt8(ascii: ".") || b == UInt8(ascii: "_") || b == UInt8(ascii: "-")
        }
    }
}
