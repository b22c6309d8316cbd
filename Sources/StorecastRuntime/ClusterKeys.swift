import Foundation
import Logging
import Metrics
import StorecastWire
import Synchronization
import ZeroMQ

/// The CURVE keys of a Storecast cluster, one pair per role, in one directory that
/// `storecast keys DIR` writes and the services read (`--zmq-keys DIR` or `STORECAST_ZMQ_KEYS`):
///
/// - `<role>.key`: the role's key pair (czmq's certificate format); secret, mode 0600. A host
///   needs only its own role's file.
/// - `<role>.pub`: the role's public key; clients check the servers they connect to with these.
/// - `allowed_keys`: `<public key> <name>` per line (a role, or a node); bound sockets accept only
///   these clients. Servers read it again within a second of a change: a name taken off it is
///   refused at once, on connections already open too.
/// - `nodes/<node>.key`, `nodes/<node>.pub`: a node's own client pair (`storecast keys DIR --node
///   NAME --role ROLE`), used instead of its role's pair for the sockets it connects when the
///   node runs with `STORECAST_ZMQ_NODE=NAME`; revoked alone with `storecast keys DIR --revoke NAME`.
/// - `storecast.env`: `STORECAST_ADMIN_TOKEN=…`, a fresh admin token for the API (compose's env file).
///
/// Replicas of a role (transcoders scaled out) share the role's pair unless each has its own
/// node pair; a stolen role pair is revoked by running `storecast keys --replace` and rolling the
/// cluster, a stolen node pair by revoking that node.
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
    /// The node whose own pair (`nodes/<node>.key`) a service connects with.
    public static let nodeVariable = "STORECAST_ZMQ_NODE"
    public static let allowListFile = "allowed_keys"
    public static let nodesDirectory = "nodes"
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
            try write(certificate(pair, what: "the \(role.rawValue) role", metadata: ["role": role.rawValue]), to: "\(directory)/\(role.rawValue).key", mode: 0o600)
            try write(pair.publicKey + "\n", to: "\(directory)/\(role.rawValue).pub", mode: 0o644)
            allowed += "\(pair.publicKey) \(role.rawValue)\n"
        }
        try write(allowed, to: "\(directory)/\(allowListFile)", mode: 0o644)
        try write("STORECAST_ADMIN_TOKEN=\(randomToken())\n", to: "\(directory)/\(envFile)", mode: 0o600)
    }

    /// Adds a node's own client pair (`nodes/NAME.key`, `.pub`) and allows it. The node then
    /// connects with it when run with `STORECAST_ZMQ_NODE=NAME`.
    public static func addNode(_ name: String, role: Role, in directory: String) throws {
        guard Slug.isValid(name), Role(rawValue: name) == nil else {
            throw Problem(description: "a node name must be \(Slug.rule), and not a role's name")
        }
        let list = "\(directory)/\(allowListFile)"
        let current = try read(list)
        guard try allowList(current, file: list).values.contains(name) == false else {
            throw Problem(description: "\(name) is already in \(list); revoke it first to give it a new key")
        }
        let fm = FileManager.default
        try fm.createDirectory(atPath: "\(directory)/\(nodesDirectory)", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let pair = try CurveKeyPair.generate()
        try write(certificate(pair, what: "node \(name) (role \(role.rawValue))", metadata: ["role": role.rawValue, "node": name]), to: "\(directory)/\(nodesDirectory)/\(name).key", mode: 0o600)
        try write(pair.publicKey + "\n", to: "\(directory)/\(nodesDirectory)/\(name).pub", mode: 0o644)
        try replaceAllowList(current + (current.hasSuffix("\n") ? "" : "\n") + "\(pair.publicKey) \(name)\n", at: list)
    }

    /// Takes `name` (a node, or a whole role) off the allow-list: servers refuse it within a
    /// second, on connections already open too. A node's key files are deleted. Returns how many
    /// keys were removed.
    @discardableResult
    public static func revoke(_ name: String, in directory: String) throws -> Int {
        let list = "\(directory)/\(allowListFile)"
        let lines = try read(list).split(separator: "\n", omittingEmptySubsequences: false)
        let kept = lines.filter { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            return fields.first?.hasPrefix("#") != false || fields.count < 2 || fields[1] != name
        }
        let removed = lines.count - kept.count
        guard removed > 0 else { throw Problem(description: "\(name) is not in \(list)") }
        try replaceAllowList(kept.joined(separator: "\n"), at: list)
        try? FileManager.default.removeItem(atPath: "\(directory)/\(nodesDirectory)/\(name).key")
        try? FileManager.default.removeItem(atPath: "\(directory)/\(nodesDirectory)/\(name).pub")
        return removed
    }

    /// What a node of `role` authenticates with: its role's pair (and its own node pair, `node`,
    /// default `STORECAST_ZMQ_NODE`, for what it connects), the servers' public keys, and (for
    /// server roles) the allow-list, which follows its file. Refused peers are logged (once per
    /// address and reason per 10 s) and counted in `storecast_zmq_peers_refused_total`.
    public static func security(directory: String, role: Role, node: String? = ProcessInfo.processInfo.environment[nodeVariable], logger: Logger) throws -> ZMQSecurity {
        let pair = try keyPair(file: "\(directory)/\(role.rawValue).key")
        var nodePair: CurveKeyPair?
        if let node, !node.isEmpty {
            guard Slug.isValid(node) else { throw Problem(description: "\(nodeVariable)=\(node) is not a node name") }
            nodePair = try keyPair(file: "\(directory)/\(nodesDirectory)/\(node).key")
        }
        var servers: [String: String] = [:]
        for server in Role.allCases where server.isServer {
            guard let text = try? read("\(directory)/\(server.rawValue).pub") else { continue }
            let key = text.trimmingCharacters(in: .whitespacesAndNewlines)
            guard CurveKeyPair.decode(key) != nil else { throw Problem(description: "\(directory)/\(server.rawValue).pub is not a Z85 CURVE public key") }
            servers[server.rawValue] = key
        }
        var allowed = CurveAllowList([:])
        if role.isServer { allowed = try followedAllowList("\(directory)/\(allowListFile)", logger: logger) }
        let refusals = RefusalLog(logger: logger)
        return ZMQSecurity(curve: .init(keyPair: pair, clientKeyPair: nodePair, serverKeys: servers, allowedClients: allowed)) { address, reason in
            refusals.refused(address: address, reason: reason)
        }
    }

    /// The allow-list in `file`, read again when the file changes (checked at most once a
    /// second): a list that does not parse is logged and the last good one kept.
    static func followedAllowList(_ file: String, logger: Logger) throws -> CurveAllowList {
        @Sendable func stamp() -> String? {
            guard let a = try? FileManager.default.attributesOfItem(atPath: file) else { return nil }
            return "\((a[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0) \((a[.size] as? NSNumber)?.intValue ?? -1) \((a[.systemFileNumber] as? NSNumber)?.intValue ?? -1)"
        }
        let first = try allowList(try read(file), file: file)
        let seen = Mutex(stamp())
        return CurveAllowList(first) {
            let now = stamp()
            guard seen.withLock({ old in defer { old = now }; return old != now }) else { return nil }
            do {
                let entries = try allowList(try read(file), file: file)
                logger.info("ZeroMQ allow-list reloaded", metadata: ["file": "\(file)", "keys": "\(entries.count)", "names": "\(Set(entries.values).sorted())"])
                return entries
            } catch {
                logger.error("ZeroMQ allow-list changed but cannot be used; keeping the last one", metadata: ["file": "\(file)", "error": "\(error)"])
                return nil
            }
        }
    }

    private static func keyPair(file: String) throws -> CurveKeyPair {
        let certificate = try read(file)
        guard let secret = value(of: "secret-key", in: certificate) else {
            throw Problem(description: "\(file) has no secret-key; make the keys again with `storecast keys`")
        }
        do { return try CurveKeyPair(secretKey: secret) } catch {
            throw Problem(description: "\(file): the secret key is not a 40-character Z85 CURVE key")
        }
    }

    private static func certificate(_ pair: CurveKeyPair, what: String, metadata: [String: String]) -> String {
        """
        #   ****  storecast keys: CURVE key pair of \(what). Secret: keep it on its hosts.  ****
        metadata
        \(metadata.sorted { $0.key < $1.key }.map { "    \($0.key) = \"\($0.value)\"" }.joined(separator: "\n"))
        curve
            public-key = "\(pair.publicKey)"
            secret-key = "\(pair.secretKey)"

        """
    }

    /// Writes the allow-list whole and renames it into place, so a server never reads half of it.
    private static func replaceAllowList(_ text: String, at path: String) throws {
        let temporary = path + ".new"
        try write(text, to: temporary, mode: 0o644)
        guard rename(temporary, path) == 0 else { throw Problem(description: "cannot replace \(path)") }
    }

    /// The ZeroMQ context of a node of `role`, authenticated with the keys in the directory
    /// `option` (or `STORECAST_ZMQ_KEYS`). The services' one way to make their context.
    public static func context(option: String?, role: Role, logger: Logger) throws -> ZMQContext {
        let directory = try directory(option: option)
        let context = try ZMQContext(security: try security(directory: directory, role: role, logger: logger))
        logger.info("ZeroMQ authenticated with CURVE", metadata: ["keys": "\(directory)", "role": "\(role.rawValue)"])
        return context
    }

    /// The key ingest signs lease tickets with and packagers check them with (``LeaseTicketKey``):
    /// ingest's from `ingest.key` and `packager.pub`, a packager's from `packager.key` and
    /// `ingest.pub`, in the directory `option` (or `STORECAST_ZMQ_KEYS`).
    public static func leaseKey(option: String?, role: Role) throws -> LeaseTicketKey {
        let directory = try directory(option: option)
        let peer: Role
        switch role {
        case .ingest: peer = .packager
        case .packager: peer = .ingest
        default: throw Problem(description: "only ingest and packagers hold the lease key")
        }
        let pair = try keyPair(file: "\(directory)/\(role.rawValue).key")
        let peerFile = "\(directory)/\(peer.rawValue).pub"
        guard let secret = CurveKeyPair.decode(pair.secretKey),
              let peerKey = CurveKeyPair.decode(try read(peerFile).trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw Problem(description: "\(peerFile) is not a Z85 CURVE public key; make the keys again with `storecast keys`")
        }
        return try LeaseTicketKey(secretKey: secret, peerPublicKey: peerKey)
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

    /// Logs refused peers at most once per address and reason per 10 s; counts every one.
    final class RefusalLog: Sendable {
        private let logger: Logger
        private let counter = Counter(label: "storecast_zmq_peers_refused_total")
        private let lastLogged = Mutex<[String: ContinuousClock.Instant]>([:])

        init(logger: Logger) { self.logger = logger }

        func refused(address: String, reason: String) {
            counter.increment()
            let now = ContinuousClock.now
            let log = lastLogged.withLock { seen -> Bool in
                let key = address + " " + reason
                if let last = seen[key], now - last < .seconds(10) { return false }
                if seen.count > 1024 { seen = [:] }
                seen[key] = now
                return true
            }
            if log {
                logger.warning("ZeroMQ peer refused: not an allowed Storecast node", metadata: ["peer": "\(address)", "reason": "\(reason)"])
            }
        }
    }
}
