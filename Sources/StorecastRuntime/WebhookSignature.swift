import Crypto
import Foundation

/// Standard Webhooks signing (standardwebhooks.com, issue 16): each message carries
/// `webhook-id`, `webhook-timestamp` (Unix seconds) and `webhook-signature`, a space-separated
/// list of `v1,<base64 HMAC-SHA256(key, "id.timestamp.body")>`, one per secret in use (two while
/// a rotated secret's grace lasts). A secret is `whsec_<base64 key>`.
public enum WebhookSignature {
    /// A new secret: 24 random bytes.
    public static func newSecret() -> String {
        var rng = SystemRandomNumberGenerator()
        return "whsec_" + Data((0..<24).map { _ in UInt8.random(in: 0...255, using: &rng) }).base64EncodedString()
    }

    /// The key bytes of `secret`, or nil when it is not a `whsec_` secret.
    public static func key(of secret: String) -> [UInt8]? {
        guard secret.hasPrefix("whsec_"), let data = Data(base64Encoded: String(secret.dropFirst(6))), !data.isEmpty else { return nil }
        return Array(data)
    }

    /// `v1,<signature>` of one message with one secret.
    public static func sign(secret: String, id: String, timestamp: Int64, body: [UInt8]) -> String? {
        guard let key = key(of: secret) else { return nil }
        var message = Array("\(id).\(timestamp).".utf8)
        message += body
        return "v1," + Data(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key))).base64EncodedString()
    }

    /// The three headers of a message signed with each of `secrets`.
    public static func headers(id: String, timestamp: Int64, body: [UInt8], secrets: [String]) -> [(name: String, value: String)] {
        [("webhook-id", id), ("webhook-timestamp", "\(timestamp)"),
         ("webhook-signature", secrets.compactMap { sign(secret: $0, id: id, timestamp: timestamp, body: body) }.joined(separator: " "))]
    }
}
