import Foundation
import Logging
import Metrics
import Synchronization
import ZeroMQ

/// The CURVE keys of a Storecast cluster, one pair per role, in one directory that
/// `storecast keys DIR` writes and the services read (`--zmq-keys DIR` or `STORECAST_ZMQ_KEYS`):
///
/// - `<role>.key`: the role's key pair (czmq's certificate format); secret, mode 0600. A host
///   needs only its own role's file.
/// - `<role>.pub`: the role's public key; clients check the servers they connect to with these.
/// - `allowed_keys`: `<public key> <role>` per line; bound sockets accept only these clients.
/// - `storecast.env`: `STORECAST_ADMIN_TOKEN=…`, a fresh admin token for the API (compose's env file).
///
/// Replicas of a role (transcoders scaled out) share the role's pair; a stolen pair is revoked
/// by running `storecast keys` again and rolling the cluster.
public enum ClusterKeys {
    public enum Role: String, CaseIterable, Sendable {
        case ingest, transcoder, packager, metrics, api
        /// Roles whose nodes bind sockets others connect to.
        public var isServer: Bool { self == .ingest || self == .packager || self == .metrics }
    }

    public struct Problem: Error, CustomStringConvertible {
        public let description: String
    }

    public static let environmentVariable = "STORECAST_ZMQ_KEYS"
    public static let allowListFile = "allowed_keys"
    public static let envFile = "storecast.env"

    /// The keys directory: the option, else `STORECAST_ZMQ_KEYS`; none is an error that says what to do.
    public static func directory(option: String?) throws -> String {
        if let option, !option.isEmpty { return option }
        if let env = ProcessInfo.processInfo.environment[environmentVariable], !env.isEmpty { return env }
        throw Problem(description: "ZeroMQ between Storecast's services is authenticated: run `storecast keys DIR` once, then pass --zmq-keys DIR (or set \(environmentVariable)=DIR) to every service")
    }

    /// Writes a new set of keys for every role, the allow-list and an env file with a new admin
    /// token. Refuses to overwrite an existing set unless `replace`.
    public static func generate(into directory: String, replace: Bool = false) throws {
        let fm = FileManager.default
        try fm.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        if !replace, fm.fileExists(atPath: "\(directory)/\(allowListFile)") {
            throw Problem(description: "\(directory) already holds keys; pass --replace to make new ones (every service must then be restarted with them)")
        }
        var allowed = "# Clients allowed to connect to Storecast's bound ZeroMQ sockets: <Z85 public key> <role>\n"
        for role in Role.allCases {
            let pair = try CurveKeyPair.generate()
            let certificate = """
                #   ****  storecast keys: CURVE key pair of the \(role.rawValue) role. Secret: keep it on that role's hosts.  ****
                metadata
                    role = "\(role.rawValue)"
                curve
                    public-key = "\(pair.publicKey)"
                    secret-key = "\(pair.secretKey)"

                """
            try write(certificate, to: "\(directory)/\(role.rawValue).key", mode: 0o600)
            try write(pair.publicKey + "\n", to: "\(directory)/\(role.rawValue).pub", mode: 0o644)
            allowed += "\(pair.publicKey) \(role.rawValue)\n"
        }
        try write(allowed, to: "\(directory)/\(allowListFile)", mode: 0o644)
        try write("STORECAST_ADMIN_TOKEN=\(randomToken())\n", to: "\(directory)/\(envFile)", mode: 0o600)
    }

    /// What a node of `role` authenticates with: its pair, the servers' public keys, and (for
    /// server roles) the allow-list. Refused peers are logged (once per address per 10 s) and
    /// counted in `storecast_zmq_peers_refused_total`.
    public static func security(directory: String, role: Role, logger: Logger) throws -> ZMQSecurity {
        let certificate = try read("\(directory)/\(role.rawValue).key")
        guard let secret = value(of: "secret-key", in: certificate) else {
            throw Problem(description: "\(directory)/\(role.rawValue).key has no secret-key; make the keys again with `storecast keys`")
        }
        let pair: CurveKeyPair
        do { pair = try CurveKeyPair(secretKey: secret) } catch {
            throw Problem(description: "\(directory)/\(role.rawValue).key: the secret key is not a 40-character Z85 CURVE key")
        }
        var servers: [String: String] = [:]
        for server in Role.allCases where server.isServer {
            guard let text = try? read("\(directory)/\(server.rawValue).pub") else { continue }
            let key = text.trimmingCharacters(in: .whitespacesAndNewlines)
            guard CurveKeyPair.decode(key) != nil else { throw Problem(description: "\(directory)/\(server.rawValue).pub is not a Z85 CURVE public key") }
            servers[server.rawValue] = key
        }
        var allowed: [[UInt8]: String] = [:]
        if role.isServer {
            allowed = try allowList(try read("\(directory)/\(allowListFile)"), file: "\(directory)/\(allowListFile)")
        }
        let refusals = RefusalLog(logger: logger)
        return ZMQSecurity(curve: .init(keyPair: pair, serverKeys: servers, allowedClients: allowed)) { address, reason in
            refusals.refused(address: address, reason: reason)
        }
    }

    /// The ZeroMQ context of a node of `role`, authenticated with the keys in the directory
    /// `option` (or `STORECAST_ZMQ_KEYS`). The services' one way to make their context.
    public static func context(option: String?, role: Role, logger: Logger) throws -> ZMQContext {
        let directory = try directory(option: option)
        let context = try ZMQContext(security: try security(directory: directory, role: role, logger: logger))
        logger.info("ZeroMQ authenticated with CURVE", metadata: ["keys": "\(directory)", "role": "\(role.rawValue)"])
        return context
    }

    /// `<Z85 key> <name>` lines; a line starting with `#` is a comment.
    static func allowList(_ text: String, file: String) throws -> [[UInt8]: String] {
        var allowed: [[UInt8]: String] = [:]
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            // Z85 keys may hold '#': only a line starting with it is a comment.
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard let first = fields.first, !first.hasPrefix("#") else { continue }
            guard let key = CurveKeyPair.decode(String(fields[0])) else {
                throw Problem(description: "\(file):\(number + 1): not a Z85 CURVE public key")
            }
            allowed[key] = fields.count > 1 ? String(fields[1]) : "unnamed"
        }
        guard !allowed.isEmpty else { throw Problem(description: "\(file) allows no client; make the keys with `storecast keys`") }
        return allowed
    }

    static func value(of field: String, in certificate: String) -> String? {
        for line in certificate.split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if parts.count == 2, parts[0] == field { return parts[1].trimmingCharacters(in: CharacterSet(charactersIn: "\"")) }
        }
        return nil
    }

    /// 32 random bytes as hex (the system's CSPRNG).
    public static func randomToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }

    private static func read(_ path: String) throws -> String {
        do { return try String(contentsOfFile: path, encoding: .utf8) } catch {
            throw Problem(description: "cannot read \(path): make the keys with `storecast keys DIR` and pass that directory")
        }
    }

    private static func write(_ text: String, to path: String, mode: Int) throws {
        let fm = FileManager.default
        try? fm.removeItem(atPath: path)
        guard fm.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: mode]) else {
            throw Problem(description: "cannot write \(path)")
        }
    }

    /// Logs refused peers at most once per address per 10 s; counts every one.
    final class RefusalLog: Sendable {
        private let logger: Logger
        private let counter = Counter(label: "storecast_zmq_peers_refused_total")
        private let lastLogged = Mutex<[String: ContinuousClock.Instant]>([:])

        init(logger: Logger) { self.logger = logger }

        func refused(address: String, reason: String) {
            counter.increment()
            let now = ContinuousClock.now
            let log = lastLogged.withLock { seen -> Bool in
                if let last = seen[address], now - last < .seconds(10) { return false }
                if seen.count > 1024 { seen = [:] }
                seen[address] = now
                return true
            }
            if log {
                logger.warning("ZeroMQ peer refused: not an allowed Storecast node", metadata: ["peer": "\(address)", "reason": "\(reason)"])
            }
        }
    }
}
