import Logging
import ServiceLifecycle
import UnixSignals

/// Runs an executable's services until SIGTERM or SIGINT, then shuts them down gracefully.
public enum ServiceRunner {
    public static func run(_ services: [any Service], logger: Logger) async throws {
        let group = ServiceGroup(configuration: .init(
            services: services.map { .init(service: $0) },
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger))
        try await group.run()
    }
}
