/// How a context's sockets authenticate (ZeroMQ RFC 26, CurveZMQ, with RFC 27, ZAP):
///
/// - `curve`: every bound socket is a CURVE server with this node's key and refuses, through
///   the context's ZAP handler, any client whose public key is not in `allowedClients` (and drops
///   messages from a client whose name left it since); every connecting socket is a CURVE client,
///   with `clientKeyPair` (a node's own) or else `keyPair`, that checks the server's public key,
///   which it knows by the server's role (`serverKeys`). Traffic is encrypted.
/// - `plaintext`: no authentication. Only for sockets that never leave the process (`inproc`)
///   and unit tests: the executables refuse to start without keys.
public struct ZMQSecurity: Sendable {
    public struct Curve: Sendable {
        /// The role's pair: bound sockets serve with it, and connect with it without a node pair.
        public var keyPair: CurveKeyPair
        /// This node's own pair, for the sockets it connects (nil: the role's).
        public var clientKeyPair: CurveKeyPair?
        /// Public keys of the servers this node connects to, by role ("ingest", "packager", …).
        public var serverKeys: [String: String]
        /// Clients allowed to connect to this node's bound sockets.
        public var allowedClients: CurveAllowList

        public init(keyPair: CurveKeyPair, clientKeyPair: CurveKeyPair? = nil, serverKeys: [String: String], allowedClients: CurveAllowList) {
            self.keyPair = keyPair
            self.clientKeyPair = clientKeyPair
            self.serverKeys = serverKeys
            self.allowedClients = allowedClients
        }

        public init(keyPair: CurveKeyPair, serverKeys: [String: String], allowedClients: [[UInt8]: String]) {
            self.init(keyPair: keyPair, serverKeys: serverKeys, allowedClients: CurveAllowList(allowedClients))
        }
    }

    public let curve: Curve?
    /// Told of every refused peer: its address and why (logged and counted by the caller).
    public let onRefused: @Sendable (_ address: String, _ reason: String) -> Void

    public static let plaintext = ZMQSecurity(curve: nil, onRefused: { _, _ in })

    public init(curve: Curve?, onRefused: @escaping @Sendable (_ address: String, _ reason: String) -> Void) {
        self.curve = curve
        self.onRefused = onRefused
    }

    /// The ZAP domain of Storecast's sockets.
    public static let domain = "storecast"
}
