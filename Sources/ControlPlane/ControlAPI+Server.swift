import ConnectionBudget
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import StorecastRuntime

extension ControlAPI {
    /// The API's HTTP server: HTTP/1.1 with the connection limits (header deadline, idle
    /// keep-alive, per-IP cap), where a stream's events route also upgrades to a WebSocket
    /// (``webSocketRouter(catalog:feed:)``; frames of at most 4 KiB, a ping every 15 s).
    public static func server(limits: HTTPConnectionLimits, catalog: StreamCatalog, feed: StreamEventFeed, logger: Logger) -> HTTPServerBuilder {
        let webSocket = webSocketRouter(catalog: catalog, feed: feed).buildResponder()
        return .guarded(limits: limits, listener: "api-http", logger: logger) { responder, http1 in
            HTTP1WebSocketUpgradeChannel(responder: responder, webSocketResponder: webSocket,
                                         configuration: .init(http1: http1, ws: .init(maxFrameSize: 4096, autoPing: .enabled(timePeriod: .seconds(15)))))
        }
    }
}
