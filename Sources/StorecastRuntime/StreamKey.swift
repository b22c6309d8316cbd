import Crypto
import Foundation

/// Publish credentials. Keys are random, shown once, and stored only as SHA-256 hex.
public enum StreamKey {
    /// `sk_` followed by 32 lowercase hex characters (128 bits).
    public static func generate() -> String {
        var rng = SystemRandomNumberGenerator()
        let bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &rng) }
        return "sk_" + bytes.map { String(format: "%02x", $0) }.joined()
    }

    public static func hash(_ key: String) -> String {
        SHA256.hash(data: Data(key.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    /// What operators see: enough to tell keys apart, too little to publish with.
    public static func prefix(_ key: String) -> String { String(key.prefix(7)) }
}
