import Synchronization
import StorecastWire

/// The latest heartbeat of every process, and liveness derived from it.
public final class TelemetryBoard: Sendable {
    /// A process silent for longer than this is reported down (three missed 1 s beats).
    public static let liveness: Duration = .seconds(3)

    public struct Entry: Sendable, Equatable {
        public var telemetry: Telemetry
        public var received: ContinuousClock.Instant
    }

    private let entries = Mutex<[String: Entry]>([:])

    public init() {}

    public func record(_ telemetry: Telemetry, at now: ContinuousClock.Instant) {
        entries.withLock { $0["\(telemetry.service)/\(telemetry.node)"] = Entry(telemetry: telemetry, received: now) }
    }

    public func snapshot() -> [Entry] {
        entries.withLock { Array($0.values) }.sorted { ($0.telemetry.service, $0.telemetry.node) < ($1.telemetry.service, $1.telemetry.node) }
    }

    /// The whole scrape: liveness gauges, then every process's metrics with its labels.
    public func exposition(now: ContinuousClock.Instant, own: String) -> String {
        let entries = snapshot()
        var lines = [
            "# HELP storecast_up Whether the process sent a heartbeat in the last 3 seconds.",
            "# TYPE storecast_up gauge",
        ]
        for e in entries {
            let age = now - e.received
            lines.append("storecast_up{service=\"\(e.telemetry.service)\",node=\"\(e.telemetry.node)\"} \(age <= Self.liveness ? 1 : 0)")
        }
        lines += ["# HELP storecast_heartbeat_age_seconds Seconds since the process's last heartbeat.", "# TYPE storecast_heartbeat_age_seconds gauge"]
        for e in entries {
            let age = now - e.received
            let seconds = Double(age.components.seconds) + Double(age.components.attoseconds) / 1e18
            lines.append("storecast_heartbeat_age_seconds{service=\"\(e.telemetry.service)\",node=\"\(e.telemetry.node)\"} \(seconds)")
        }
        lines += ["# HELP storecast_uptime_seconds Process uptime reported in its heartbeat.", "# TYPE storecast_uptime_seconds gauge"]
        for e in entries {
            lines.append("storecast_uptime_seconds{service=\"\(e.telemetry.service)\",node=\"\(e.telemetry.node)\"} \(e.telemetry.uptimeSeconds)")
        }
        let merged = ExpositionMerger.merge(entries.map { .init(service: $0.telemetry.service, node: $0.telemetry.node, exposition: $0.telemetry.exposition) })
        return lines.joined(separator: "\n") + "\n" + merged + own
    }
}
