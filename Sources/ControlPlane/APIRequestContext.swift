import Hummingbird
import NIOCore

/// The API's request context: Hummingbird's basics, the client's address (failed
/// authentication is limited per address) and, once ``APIAuthenticator`` checked its token, who
/// is calling.
public struct APIRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?
    public var principal: Principal?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }
}
