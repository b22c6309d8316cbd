import ArgumentParser
import StorecastRuntime

/// `storecast keys DIR`: the cluster's CURVE key pairs, the allow-list and an admin token.
struct Keys: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Make the CURVE keys every ZeroMQ socket authenticates with, and an admin token.",
        discussion: """
        Writes <role>.key (secret, 0600) and <role>.pub for ingest, transcoder, packager, metrics and api, \
        allowed_keys (the clients bound sockets accept) and storecast.env (STORECAST_ADMIN_TOKEN=…, compose's env file). \
        Give each host its role's .key, every .pub and allowed_keys; pass the directory with --zmq-keys or STORECAST_ZMQ_KEYS.
        """)

    @Argument(help: "Directory to write (made 0700 if missing).") var directory: String
    @Flag(help: "Replace the keys already there (every service must restart with the new ones).") var replace = false

    func run() throws {
        try ClusterKeys.generate(into: directory, replace: replace)
        print("storecast keys: wrote \(ClusterKeys.Role.allCases.map { "\($0.rawValue).key" }.joined(separator: ", ")), the .pub files, \(ClusterKeys.allowListFile) and \(ClusterKeys.envFile) in \(directory)")
    }
}
