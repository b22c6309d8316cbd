import ConnectionBudget
import NIOCore
import NIOPosix
import Testing

/// Every HTTP listener (packager, API, metrics) takes new connections in bursts: Hummingbird's
/// bootstrap leaves NIO's 4 accepts per wakeup, and the limits' `onServerRunning` raises it on
/// the bound listening channel (docs/benchmarks.md: the 1,000-connection tail).
@Suite struct AcceptBurstTests {
    @Test(arguments: [64, 1, 0])
    func theListenerAcceptsABurstPerWakeup(_ accepts: Int) async throws {
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { $0.eventLoop.makeSucceededVoidFuture() }
            .bind(host: "127.0.0.1", port: 0).get()
        var limits = HTTPConnectionLimits()
        #expect(limits.acceptsPerWakeup == 64)
        limits.acceptsPerWakeup = accepts
        await limits.onServerRunning(server)
        #expect(try await server.getOption(ChannelOptions.maxMessagesPerRead).get() == UInt(max(1, accepts)))
        try await server.close()
    }
}
