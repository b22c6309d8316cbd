import Foundation

/// The address a request came from (the packager's viewer counts, the API's limit on wrong
/// tokens): the connection's peer, unless the peer
/// is a configured proxy (a CDN edge, a load balancer), whose `X-Forwarded-For` then names the
/// client: the rightmost hop that is not itself a trusted proxy (nginx's `real_ip_recursive`).
/// A forwarded header from anyone else is ignored (issue 23: it was believed from anyone). Pure.
public enum ClientAddress {
    public static func resolve(peer: String?, forwardedFor: String?, trustedProxies: Set<String>) -> String? {
        guard let peer, trustedProxies.contains(peer), let forwardedFor else { return peer }
        let hops = forwardedFor.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        return hops.last { !trustedProxies.contains($0) } ?? hops.first ?? peer
    }
}
