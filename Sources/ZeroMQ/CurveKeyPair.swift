private import CZeroMQ

/// A CurveZMQ key pair (ZeroMQ RFC 26), both keys in Z85 text (40 characters).
public struct CurveKeyPair: Sendable, Equatable {
    public let publicKey: String
    public let secretKey: String

    /// A new pair from libzmq (libsodium's random source).
    public static func generate() throws -> CurveKeyPair {
        var pub = [CChar](repeating: 0, count: 41), sec = [CChar](repeating: 0, count: 41)
        guard zmq_curve_keypair(&pub, &sec) == 0 else { throw ZMQError.last("curve_keypair") }
        return CurveKeyPair(publicKey: Self.text(pub), secretKey: Self.text(sec))
    }

    /// The pair of a secret key (its public key derived from it).
    public init(secretKey: String) throws {
        guard Self.decode(secretKey) != nil else { throw ZMQError(operation: "curve key", code: EINVAL, message: "not a 40-character Z85 CURVE key") }
        var pub = [CChar](repeating: 0, count: 41)
        guard zmq_curve_public(&pub, secretKey) == 0 else { throw ZMQError.last("curve_public") }
        self.init(publicKey: Self.text(pub), secretKey: secretKey)
    }

    private init(publicKey: String, secretKey: String) {
        self.publicKey = publicKey
        self.secretKey = secretKey
    }

    /// The 32 bytes of a Z85 key, or nil when it is not one.
    public static func decode(_ z85: String) -> [UInt8]? {
        guard z85.utf8.count == 40 else { return nil }
        var bytes = [UInt8](repeating: 0, count: 32)
        guard zmq_z85_decode(&bytes, z85) != nil else { return nil }
        return bytes
    }

    /// The Z85 text of 32 key bytes.
    public static func encode(_ key: [UInt8]) -> String? {
        guard key.count == 32 else { return nil }
        var text = [CChar](repeating: 0, count: 41)
        guard zmq_z85_encode(&text, key, 32) != nil else { return nil }
        return Self.text(text)
    }

    private static func text(_ c: [CChar]) -> String {
        String(decoding: c.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
