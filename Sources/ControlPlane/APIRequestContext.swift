import Hummingbird
import HummingbirdWebSocket
import NIOCore

/// The API's request context: Hummingbird's basics, the client's address (failed
/// authentication is limited per address) and, once ``APIAuthenticator`` checked its token, who
/// is calling.
public struct APIRequestContext: RequestContext, RemoteAddressRequestContext, WebSocketRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?
    public var principal: Principal?
    /// The handler of a request that upgrades to a WebSocket (a stream's events).
    public let webSocket = WebSocketHandlerReference<Self>()

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }
}
