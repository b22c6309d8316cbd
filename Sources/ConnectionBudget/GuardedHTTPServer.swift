import Hummingbird
import HummingbirdCore
import Logging
import NIOCore

/// The one HTTP/1.1 server setup of every Storecast HTTP listener (packager, API, metrics):
/// Hummingbird's HTTP1 channel with a deadline and size budget on each connection, and a
/// per-IP connection cap in front of it.
///
/// - Headers must arrive, and an idle keep-alive connection closes, within `idleTimeout`
///   (Hummingbird's idle timer only restarts on a fully decoded request part or a finished
///   response, so a slowloris trickling header bytes is closed too; a response being produced,
///   such as an LL-HLS blocking reload, is never cut). nginx: `client_header_timeout` 60 s,
///   `keepalive_timeout` 75 s; ours is 10 s for both.
/// - Request headers: at most `maximumHeaderBytes` in all and 100 fields (nginx:
///   `large_client_header_buffers 4 8k`); a bigger request gets 400 and the connection closes.
public struct HTTPConnectionLimits: Sendable {
    public var idleTimeout: Duration = .seconds(10)
    public var maximumHeaderBytes = 16 * 1024
    public var maximumHeaderFields = 100
    /// Open connections from one IP address (0: no cap). A CDN pulls from the origin through
    /// few addresses: raise it, or put the CDN's addresses behind `--trusted-proxy`, there.
    public var maximumConnectionsPerIP = 256
    /// Connections the kernel queues before they are accepted. Hummingbird's 256 fills under a
    /// flood of new connections (a slowloris reopening what the deadline closes), and a player's
    /// new connection then waits a SYN retransmit (1 s); Linux caps it at net.core.somaxconn.
    public var listenBacklog = 4096
    /// Connections accepted each time the listening socket wakes its event loop. NIO's default
    /// is 4: under a burst of new connections (a thousand players joining a show, a CDN's edges
    /// reconnecting) the kernel's queue then drains 4 at a time between rounds over every busy
    /// connection, and a request sent on a connection still queued waits seconds for its answer
    /// (docs/benchmarks.md: at 1,000 connections p99 0.65–1.27 s, and 319–468 requests over
    /// 2 s in 10 s; with 64, p99 0.10–0.31 s and none, over five runs).
    public var acceptsPerWakeup = 64

    public init() {}
}

extension HTTPConnectionLimits {
    /// `idleTimeout` as NIO counts time.
    public var idleTimeAmount: TimeAmount {
        let seconds = idleTimeout.components
        return .nanoseconds(seconds.seconds * 1_000_000_000 + seconds.attoseconds / 1_000_000_000)
    }

    /// Hummingbird's HTTP/1.1 configuration (also each HTTP/2 stream's) with these limits'
    /// idle timer and header budget.
    var http1Configuration: HTTP1Channel.Configuration {
        HTTP1Channel.Configuration(
            idleTimeout: idleTimeAmount,
            httpDecoderConfiguration: .init(maxHeaderFieldSize: maximumHeaderBytes, maxHeaderListSize: maximumHeaderBytes, maxHeaderFieldCount: maximumHeaderFields))
    }
}

extension HTTPConnectionLimits {
    /// For Hummingbird's `onServerRunning`: what its bootstrap does not expose, set on the
    /// listening channel once it is bound (``acceptsPerWakeup``). A listener already closing
    /// refuses the option, and then there is nothing left to tune.
    public var onServerRunning: @Sendable (any Channel) async -> Void {
        let accepts = UInt(max(1, acceptsPerWakeup))
        return { channel in try? await channel.setOption(ChannelOptions.maxMessagesPerRead, value: accepts) }
    }
}

extension ApplicationConfiguration {
    /// Where an HTTP server of ours listens, with the backlog of its ``HTTPConnectionLimits``.
    public static func guarded(host: String, port: Int, serverName: String, limits: HTTPConnectionLimits) -> ApplicationConfiguration {
        .init(address: .hostname(host, port: port), serverName: serverName, backlog: limits.listenBacklog)
    }
}

extension HTTPServerBuilder {
    /// HTTP/1.1 with ``HTTPConnectionLimits``; `listener` names the cap in logs and metrics.
    /// `inFrontOfRouter` makes a handler of the caller's for each connection, placed right behind
    /// Hummingbird's connection-state handler (so keep-alive and the idle deadline see every
    /// request and answer) and before the requests reach the router's task. It reads and writes
    /// `HTTPRequestPart` and `HTTPResponsePart`: a hot path answered on the event loop; what it
    /// does not answer it hands on.
    ///
    /// `onTheWire` makes a handler of the caller's that reads the connection's bytes before
    /// Hummingbird's HTTP/1.1 parser does, right behind the connection's cap and first-request
    /// deadline: a hot path that answers some requests itself, in bytes, and hands every other
    /// request on whole. It gets the connection's ``ConnectionActivity``; the connection's idle
    /// deadline is then ``HTTP1IdleDeadline``, which counts its answers, instead of Hummingbird's.
    public static func guardedHTTP1(limits: HTTPConnectionLimits, listener: String, logger: Logger,
                                    inFrontOfRouter: (@Sendable () -> any ChannelHandler)? = nil,
                                    onTheWire: (@Sendable (ConnectionActivity) -> any ChannelHandler)? = nil) -> HTTPServerBuilder {
        var configuration = limits.http1Configuration
        if onTheWire != nil { configuration.idleTimeout = nil }  // HTTP1IdleDeadline's, below
        let idle = limits.idleTimeAmount
        return guarded(limits: limits, listener: listener, logger: logger, configuration: configuration, before: { pipeline, activity in
            if let onTheWire { try pipeline.addHandler(onTheWire(activity)) }
        }, after: { pipeline, activity in
            let state = try pipeline.handler(type: HTTPConnectionStateHandler.self)
            if let inFrontOfRouter { try pipeline.addHandler(inFrontOfRouter(), position: .after(state)) }
            if onTheWire != nil { try pipeline.addHandler(HTTP1IdleDeadline(activity: activity, deadline: idle), position: .after(state)) }
        }) { responder, configuration in HTTP1Channel(responder: responder, configuration: configuration) }
    }

    /// An HTTP/1.1 channel of any kind (Hummingbird's, or one that can upgrade to WebSocket) with
    /// ``HTTPConnectionLimits``: `channel` makes it from the responder and the HTTP/1.1
    /// configuration that carries the limits' deadline and header budget (`configuration`, when
    /// given, in its place). `before` adds handlers right behind the cap and the first request's
    /// deadline, `after` once the base has set up its own; both get the connection's activity.
    public static func guarded<Base: HTTPChannelHandler>(
        limits: HTTPConnectionLimits, listener: String, logger: Logger,
        configuration: HTTP1Channel.Configuration? = nil,
        before: @escaping @Sendable (ChannelPipeline.SynchronousOperations, ConnectionActivity) throws -> Void = { _, _ in },
        after: @escaping @Sendable (ChannelPipeline.SynchronousOperations, ConnectionActivity) throws -> Void = { _, _ in },
        channel: @escaping @Sendable (@escaping HTTPChannelHandler.Responder, HTTP1Channel.Configuration) -> Base
    ) -> HTTPServerBuilder {
        let cap = PerIPConnectionCap(maximumPerIP: limits.maximumConnectionsPerIP, listener: listener, logger: logger)
        let (idle, configuration) = (limits.idleTimeAmount, configuration ?? limits.http1Configuration)
        let tally = DeadlineTally(listener: listener, logger: logger)
        return .init { responder in
            GuardedHTTPChannel(base: channel(responder, configuration), before: { pipeline, activity in
                try pipeline.addHandler(cap.makeHandler())
                try pipeline.addHandler(FirstRequestDeadline(deadline: idle, tally: tally))
                try before(pipeline, activity)
            }, after: after)
        }
    }
}

/// An HTTP channel with handlers of ours around the base's: `before` adds them first in the
/// pipeline (the per-IP cap, the first request's header deadline), `after` once the base has set
/// up its own (the TLS handshake's deadline, right behind the TLS handler). Both get the
/// connection's ``ConnectionActivity``, made for each connection.
struct GuardedHTTPChannel<Base: HTTPChannelHandler>: HTTPChannelHandler {
    typealias Value = Base.Value
    let base: Base
    let before: @Sendable (ChannelPipeline.SynchronousOperations, ConnectionActivity) throws -> Void
    var after: @Sendable (ChannelPipeline.SynchronousOperations, ConnectionActivity) throws -> Void = { _, _ in }
    var responder: HTTPChannelHandler.Responder { base.responder }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let activity = NIOLoopBound(ConnectionActivity(), eventLoop: channel.eventLoop)
        return channel.eventLoop.makeCompletedFuture {
            try before(channel.pipeline.syncOperations, activity.value)
        }.flatMap {
            let value = base.setup(channel: channel, logger: logger)
            do {
                try after(channel.pipeline.syncOperations, activity.value)
            } catch {
                channel.close(promise: nil)
                return channel.eventLoop.makeFailedFuture(error)
            }
            return value
        }
    }

    func handle(value: Value, logger: Logger) async { await base.handle(value: value, logger: logger) }
}
