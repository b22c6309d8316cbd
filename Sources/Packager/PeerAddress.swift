import NIOCore

/// A connection's client address as the viewer accounting reads it (its text), found on the first
/// request and kept: the hot paths would otherwise format it for every answer.
struct PeerAddress {
    private var found: String??

    mutating func of(_ channel: any Channel) -> String? {
        if let found { return found }
        let address = channel.remoteAddress?.ipAddress
        found = .some(address)
        return address
    }
}
