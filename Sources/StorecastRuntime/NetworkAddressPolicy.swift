import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Which addresses a webhook may be sent to (issue 16: SSRF). A tenant's endpoint URL must not
/// reach into the operator's own networks: loopback, private, link-local (cloud metadata at
/// 169.254.169.254), carrier-grade NAT, unique-local, multicast and reserved ranges are refused
/// unless the operator allows them. Pure but for ``resolve(_:)``.
public enum NetworkAddressPolicy {
    /// Whether `address` (IPv4 or IPv6 text) is one a tenant's webhook may not reach; text that
    /// is not an address counts as refused.
    public static func isInternal(_ address: String) -> Bool {
        var v4 = in_addr()
        if inet_pton(AF_INET, address, &v4) == 1 { return isInternal(v4: withUnsafeBytes(of: v4.s_addr) { Array($0) }) }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, address, &v6) == 1 else { return true }
        let b = withUnsafeBytes(of: v6) { Array($0) }
        if b.allSatisfy({ $0 == 0 }) { return true }                                 // ::
        if b[0..<15].allSatisfy({ $0 == 0 }) && b[15] == 1 { return true }            // ::1
        if b[0..<10].allSatisfy({ $0 == 0 }) && b[10] == 0xFF && b[11] == 0xFF {      // ::ffff:a.b.c.d
            return isInternal(v4: Array(b[12..<16]))
        }
        if b[0..<12].allSatisfy({ $0 == 0 }) { return true }                          // ::a.b.c.d (IPv4-compatible, deprecated)
        if b[0] == 0x20, b[1] == 0x02 { return isInternal(v4: Array(b[2..<6])) }     // 2002::/16 6to4: its IPv4
        if b[0] == 0x00, b[1] == 0x64, b[2] == 0xFF, b[3] == 0x9B, b[4] == 0, b[5] == 1 { return true }  // 64:ff9b:1::/48 local NAT64
        if b[0] == 0x00, b[1] == 0x64, b[2] == 0xFF, b[3] == 0x9B, b[4..<12].allSatisfy({ $0 == 0 }) {  // 64:ff9b::/96 (NAT64)
            return isInternal(v4: Array(b[12..<16]))
        }
        if b[0] & 0xFE == 0xFC { return true }                                       // fc00::/7 unique local
        if b[0] == 0xFE && b[1] & 0xC0 == 0x80 { return true }                       // fe80::/10 link local
        if b[0] == 0xFF { return true }                                              // multicast
        if b[0] == 0x20, b[1] == 0x01, b[2] == 0x0D, b[3] == 0xB8 { return true }   // 2001:db8::/32 documentation
        return false
    }

    private static func isInternal(v4 a: [UInt8]) -> Bool {
        switch (a[0], a[1]) {
        case (0, _), (10, _), (127, _), (169, 254), (192, 168): return true
        case (100, 64...127), (172, 16...31), (198, 18...19): return true
        case (192, 0) where a[2] == 0 || a[2] == 2: return true                      // 192.0.0/24, TEST-NET-1
        case (198, 51) where a[2] == 100, (203, 0) where a[2] == 113: return true     // TEST-NET-2, -3
        case (224...255, _): return true                                             // multicast, reserved, broadcast
        default: return false
        }
    }

    /// The addresses `host` resolves to (getaddrinfo; blocks).
    public static func resolve(_ host: String) -> [String] {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &list) == 0, let first = list else { return [] }
        defer { freeaddrinfo(first) }
        var out: [String] = []
        var node: UnsafeMutablePointer<addrinfo>? = first
        while let n = node {
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            if n.pointee.ai_family == AF_INET {
                n.pointee.ai_addr.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { var a = $0.pointee.sin_addr; _ = inet_ntop(AF_INET, &a, &text, socklen_t(text.count)) }
            } else if n.pointee.ai_family == AF_INET6 {
                n.pointee.ai_addr.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { var a = $0.pointee.sin6_addr; _ = inet_ntop(AF_INET6, &a, &text, socklen_t(text.count)) }
            }
            let s = String(cString: text)
            if !s.isEmpty, !out.contains(s) { out.append(s) }
            node = n.pointee.ai_next
        }
        return out
    }

    /// Where a webhook for a URL goes: the one address a sender connects to, or why it may not.
    public enum Verdict: Equatable, Sendable {
        /// Connect to `address` (checked), asking for `host` (HTTP Host, TLS name).
        case connect(host: String, address: String)
        case refused(String)
    }

    /// Where a webhook for `url` may go: http(s) with a host and no credentials, resolved once
    /// with `resolve`, every address public (unless `allowInternal`); the sender then connects to
    /// the first of those addresses and resolves nothing again. A host that resolves to a public
    /// address for the check and to an internal one for the connection (DNS rebinding) therefore
    /// cannot reach the operator's networks. Resolves the host (blocks).
    public static func verdict(for url: String, allowInternal: Bool, resolve: (String) -> [String] = resolve) -> Verdict {
        guard let u = URL(string: url), let scheme = u.scheme?.lowercased(), scheme == "https" || scheme == "http", let host = u.host, !host.isEmpty else {
            return .refused("the URL must be http:// or https:// with a host")
        }
        guard u.user == nil, u.password == nil else { return .refused("the URL may not carry a user or password") }
        let bare = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        let addresses = resolve(bare)
        guard let first = addresses.first else { return .refused("\(host) does not resolve") }
        if !allowInternal, let inside = addresses.first(where: isInternal) {
            return .refused("\(host) resolves to \(inside), inside the operator's networks; webhooks go to public addresses only")
        }
        return .connect(host: bare, address: first)
    }

    /// Why `url` may not receive webhooks, or nil when it may (``verdict(for:allowInternal:resolve:)``;
    /// with `allowInternal`, the URL's form only: a development host need not resolve yet).
    public static func refusal(of url: String, allowInternal: Bool) -> String? {
        if case .refused(let why) = verdict(for: url, allowInternal: allowInternal, resolve: allowInternal ? { [$0] } : resolve) { return why }
        return nil
    }
}
