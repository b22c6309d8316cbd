import ArgumentParser
import StorecastRuntime

/// `storecast keys DIR`: the cluster's CURVE key pairs, the allow-list and an admin token.
struct Keys: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Make the CURVE keys every ZeroMQ socket authenticates with, and an admin token.",
        discussion: """
        Writes <role>.key (secret, 0600) and <role>.pub for ingest, transcoder, packager, metrics and api, \
        allowed_keys (the clients bound sockets accept) and storecast.env (STORECAST_ADMIN_TOKEN=…, compose's env file). \
        Give each host its role's .key, every .pub and allowed_keys; pass the directory with --zmq-keys or STORECAST_ZMQ_KEYS. \
        --node NAME --role ROLE adds a node's own pair, so that node can be revoked alone (--revoke NAME); \
        servers follow allowed_keys without a restart.
        """)

    @Argument(help: "Directory to write (made 0700 if missing).") var directory: String
    @Flag(help: "Replace the keys already there (every service must restart with the new ones).") var replace = false
    @Option(help: "Add a node's own client pair (nodes/NAME.key) to existing keys and allow it; run that node with STORECAST_ZMQ_NODE=NAME.") var node: String?
    @Option(help: "The role of the node given with --node.") var role: String?
    @Option(help: "Take a node (or a whole role) off the allow-list: servers refuse it within a second, on open connections too.") var revoke: String?

    func run() throws {
        if let revoke {
            let removed = try ClusterKeys.revoke(revoke, in: directory)
            print("storecast keys: \(revoke) revoked (\(removed) key\(removed == 1 ? "" : "s") off \(ClusterKeys.allowListFile)); servers refuse it within a second")
            return
        }
        if let node {
            guard let role, let parsed = ClusterKeys.Role(rawValue: role) else {
                throw ValidationError("--node needs --role, one of \(ClusterKeys.Role.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            try ClusterKeys.addNode(node, role: parsed, in: directory)
            print("storecast keys: wrote \(ClusterKeys.nodesDirectory)/\(node).key and allowed it; give that file to the node and run it with \(ClusterKeys.nodeVariable)=\(node)")
            return
        }
        try ClusterKeys.generate(into: directory, replace: replace)
        print("storecast keys: wrote \(ClusterKeys.Role.allCases.map { "\($0.rawValue).key" }.joined(separator: ", ")), the .pub files, \(ClusterKeys.allowListFile) and \(ClusterKeys.envFile) in \(directory)")
    }
}
