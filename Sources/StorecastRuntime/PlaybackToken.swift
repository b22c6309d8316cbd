import Crypto
import Foundation

/// Signed playback access for private streams: `<expiry>.<signature>`, where the signature is
/// HMAC-SHA256 over `tenant/stream/expiry` with the tenant's playback secret, base64url without
/// padding. Expiry is Unix seconds. Verification compares in constant time (swift-crypto's
/// `isValidAuthenticationCode`).
public enum PlaybackToken {
    public enum Denial: Error, Equatable, CustomStringConvertible {
        case missing
        case malformed
        case badSignature
        case expired(at: Int64)

        /// 401 when there is no token at all, 403 when the one given does not grant access.
        public var httpStatus: Int { self == .missing ? 401 : 403 }

        /// The metrics label.
        public var reason: String {
            switch self {
            case .missing: "missing"
            case .malformed: "malformed"
            case .badSignature: "bad_signature"
            case .expired: "expired"
            }
        }

        public var description: String {
            switch self {
            case .missing: "This stream is private: add ?token=<playback token> (POST /v1/tenants/:tenant/streams/:stream/playback-tokens issues one)."
            case .malformed: "The playback token is not of the form <expiry>.<signature>; request a new one."
            case .badSignature: "The playback token was not issued for this stream, or the tenant's secret changed; request a new one."
            case .expired(let at): "The playback token expired at \(at) (Unix seconds); request a new one."
            }
        }
    }

    static func message(tenant: String, stream: String, expiry: Int64) -> Data {
        Data("\(tenant)/\(stream)/\(expiry)".utf8)
    }

    public static func issue(tenant: String, stream: String, expiry: Int64, secret: String) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: message(tenant: tenant, stream: stream, expiry: expiry), using: SymmetricKey(data: Data(secret.utf8)))
        return "\(expiry)." + base64URL(Data(mac))
    }

    public static func verify(_ token: String?, tenant: String, stream: String, secret: String, now: Int64) throws(Denial) {
        guard let token, !token.isEmpty else { throw .missing }
        let pieces = token.split(separator: ".", omittingEmptySubsequences: false)
        guard pieces.count == 2, pieces[0].count <= 12, let expiry = Int64(pieces[0]), expiry >= 0, let signature = decodeBase64URL(String(pieces[1])), signature.count == 32 else {
            throw .malformed
        }
        guard HMAC<SHA256>.isValidAuthenticationCode(signature, authenticating: message(tenant: tenant, stream: stream, expiry: expiry), using: SymmetricKey(data: Data(secret.utf8))) else {
            throw .badSignature
        }
        guard expiry > now else { throw .expired(at: expiry) }
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    static func decodeBase64URL(_ text: String) -> Data? {
        guard text.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else { return nil }
        var s = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while s.count % 4 != 0 { s += "=" }
        return Data(base64Encoded: s)
    }
}
