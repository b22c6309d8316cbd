import Logging
import Metrics
import Prometheus

/// Process-wide logging and metrics set-up, done once by each executable's composition root.
public enum Observability {
    /// The registry behind swift-metrics in this process; the telemetry reporter ships it.
    public static let registry = PrometheusCollectorRegistry()

    public static func bootstrap(service: String, logLevel: Logger.Level) {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = logLevel
            handler.metadata = ["service": .string(service)]
            return handler
        }
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
    }
}
