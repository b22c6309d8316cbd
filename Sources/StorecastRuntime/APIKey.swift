/// A tenant's API key (issue 16): `sck_<id>_<secret>`. The id (12 lowercase letters and digits)
/// is public, names the key in lists and logs, and finds its row; the secret (40 of the same,
/// about 206 bits) is kept only as its SHA-256, so the key is shown once, when it is made.
public struct APIKey: Sendable, Equatable {
    public static let idLength = 12
    public static let secretLength = 40
    static let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789".utf8)

    public let id: String
    public let secret: String

    public var text: String { "sck_\(id)_\(secret)" }

    /// A new key from the system's random source.
    public static func generate() -> APIKey {
        var rng = SystemRandomNumberGenerator()
        func random(_ count: Int) -> String {
            String(decoding: (0..<count).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &rng)] }, as: UTF8.self)
        }
        return APIKey(id: random(idLength), secret: random(secretLength))
    }

    /// The key in `text`, or nil when it is not shaped like one (nothing is looked up for it).
    public static func parse(_ text: String) -> APIKey? {
        let parts = text.split(separator: "_", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "sck", parts[1].utf8.count == idLength, parts[2].utf8.count == secretLength,
              (Array(parts[1].utf8) + Array(parts[2].utf8)).allSatisfy(alphabet.contains) else { return nil }
        return APIKey(id: String(parts[1]), secret: String(parts[2]))
    }

    /// The stored form of the secret: SHA-256, hex (as stream keys are kept).
    public var secretHash: String { StreamKey.hash(secret) }

    /// Whether `secret` hashes to `storedHash`, in time that does not depend on where they differ.
    public static func matches(secret: String, storedHash: String) -> Bool {
        ConstantTime.equal(StreamKey.hash(secret), storedHash)
    }
}
