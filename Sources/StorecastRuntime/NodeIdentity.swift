import Foundation

/// How a process names itself in logs, sessions and telemetry.
public enum NodeIdentity {
    /// `hostname-pid` unless the operator set one.
    public static func defaultNodeID(service: String) -> String {
        "\(service)-\(ProcessInfo.processInfo.hostName.split(separator: ".").first ?? "host")-\(ProcessInfo.processInfo.processIdentifier)"
    }

    /// `service-hostname-port`: stable across restarts (a packager's placement and the packages
    /// it continues after a restart are keyed by it), unique per host and port.
    public static func stableNodeID(service: String, port: Int) -> String {
        "\(service)-\(ProcessInfo.processInfo.hostName.split(separator: ".").first ?? "host")-\(port)"
    }
}
