/// One NOTIFY received by a connection that LISTENs on its channel.
public struct PostgresNotification: Sendable, Equatable {
    public var channel: String
    public var payload: String

    public init(channel: String, payload: String) {
        self.channel = channel
        self.payload = payload
    }
}
