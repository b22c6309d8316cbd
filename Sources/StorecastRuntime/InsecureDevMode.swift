/// `--insecure-dev` on the control API (`storecast dev` passes it): conveniences for one
/// developer's machine that production must not have. It starts without an admin token given
/// (``AdminToken/checkOrMake(_:insecureDev:)`` makes one for the run) and lets webhooks reach
/// loopback and private addresses, where a developer's receiver runs. So that it cannot expose
/// either, it serves this host only: a listening address other than loopback refuses to start.
public enum InsecureDevMode {
    public struct Refused: Error, CustomStringConvertible {
        public let description: String
    }

    /// Loopback names and addresses: 127.0.0.0/8, ::1 and localhost.
    public static func isLoopback(_ host: String) -> Bool {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        if bare == "localhost" || bare == "::1" { return true }
        let octets = bare.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil }
    }

    /// Refuses `--insecure-dev` with a listening address other than loopback.
    public static func checkHost(_ host: String) throws {
        guard isLoopback(host) else {
            throw Refused(description: "--insecure-dev serves this host only, and --http-host is \(host): bind 127.0.0.1, or drop --insecure-dev and give an admin token (`storecast keys DIR` writes one)")
        }
    }
}
