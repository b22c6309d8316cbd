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
    /// The most processes reported at once: a peer inventing node names cannot grow the
    /// collector (or a scrape) without end.
    public let maximumNodes: Int
    /// A process silent this long leaves the scrape (until then it shows `storecast_up 0`).
    public let forgetAfter: Duration
    public static let maximumNameLength = 128

    public init(maximumNodes: Int = 1024, forgetAfter: Duration = .seconds(600)) {
        self.maximumNodes = maximumNodes
        self.forgetAfter = forgetAfter
    }

    public enum Recorded: Equatable, Sendable {
        case recorded
        /// A new process while ``maximumNodes`` are reported.
        case full
        /// A service or node name longer than ``maximumNameLength``, or empty.
        case badName
    }

    /// Keeps the heartbeat; forgets processes silent for ``forgetAfter`` first.
    @discardableResult
    public func record(_ telemetry: Telemetry, at now: ContinuousClock.Instant) -> Recorded {
        let names = [telemetry.service, telemetry.node]
        guard names.allSatisfy({ !$0.isEmpty && $0.utf8.count <= Self.maximumNameLength }) else { return .badName }
        let key = "\(telemetry.service)/\(telemetry.node)"
        return entries.withLock { entries in
            if entries[key] == nil {
                entries = entries.filter { now - $0.value.received < forgetAfter }
                guard entries.count < maximumNodes else { return .full }
            }
            entries[key] = Entry(telemetry: telemetry, received: now)
            return .recorded
        }
    }

    public func snapshot(now: ContinuousClock.Instant = .now) -> [Entry] {
        entries.withLock { entries in
            entries = entries.filter { now - $0.value.received < forgetAfter }
            return Array(entries.values)
        }.sorted { ($0.telemetry.service, $0.telemetry.node) < ($1.telemetry.service, $1.telemetry.node) }
    }

    /// The whole scrape: liveness gauges, then every process's metrics with its labels.
    public func exposition(now: ContinuousClock.Instant, own: String) -> String {
        let entries = snapshot(now: now)
        var lines = [
            "# HELP storecast_up Whether the process sent a heartbeat in the last 3 seconds.",
            "# TYPE storecast_up gauge",
        ]
        for e in entries {
            let age = now - e.received
            lines.append("storecast_up{\(Self.labels(e))} \(age <= Self.liveness ? 1 : 0)")
        }
        lines += ["# HELP storecast_heartbeat_age_seconds Seconds since the process's last heartbeat.", "# TYPE storecast_heartbeat_age_seconds gauge"]
        for e in entries {
            let age = now - e.received
            let seconds = Double(age.components.seconds) + Double(age.components.attoseconds) / 1e18
            lines.append("storecast_heartbeat_age_seconds{\(Self.labels(e))} \(seconds)")
        }
        lines += ["# HELP storecast_uptime_seconds Process uptime reported in its heartbeat.", "# TYPE storecast_uptime_seconds gauge"]
        for e in entries {
            lines.append("storecast_uptime_seconds{\(Self.labels(e))} \(e.telemetry.uptimeSeconds)")
        }
        let merged = ExpositionMerger.merge(entries.map { .init(service: $0.telemetry.service, node: $0.telemetry.node, exposition: $0.telemetry.exposition) })
        return lines.joined(separator: "\n") + "\n" + merged + own
    }

    /// A process's `service` and `node` labels, escaped (names come from the wire).
    static func labels(_ e: Entry) -> String {
        "service=\"\(ExpositionMerger.escape(e.telemetry.service))\",node=\"\(ExpositionMerger.escape(e.telemetry.node))\""
    }
}
