import Foundation

/// How a process names itself in logs, sessions and telemetry.
public enum NodeIdentity {
    /// `hostname-pid` unless the operator set one.
    public static func defaultNodeID(service: String) -> String {
        "\(service)-\(ProcessInfo.processInfo.hostName.split(separator: ".").first ?? "host")-\(ProcessInfo.processInfo.processIdentifier)"
    }
}
