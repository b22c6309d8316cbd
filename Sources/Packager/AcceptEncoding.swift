/// What a request's `Accept-Encoding` field accepts (RFC 9110 12.5.3), read without Foundation:
/// whether the packager may answer with a playlist in gzip (``PlaylistEncoding``). The field
/// comes from any client, so it is fuzzed (`fuzz/run.sh acceptencoding`).
enum AcceptEncoding {
    /// Whether an `Accept-Encoding` field (RFC 9110 12.5.3) accepts gzip: `gzip` or `x-gzip`
    /// listed with a weight above 0, or else `*` with a weight above 0. A coding listed twice
    /// counts by its first weight; an item whose weight does not read as one is not an acceptance.
    static func acceptsGzip(_ field: String?) -> Bool {
        guard let field else { return false }
        var wildcard: Bool?
        for item in field.split(separator: ",") {
            let parts = item.split(separator: ";")
            guard let coding = parts.first?.trimmingWhitespace().lowercased(), !coding.isEmpty else { continue }
            var weight = 1.0
            for parameter in parts.dropFirst() {
                let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingWhitespace() }
                guard pair.count == 2, pair[0].lowercased() == "q" else { continue }
                guard let q = qValue(pair[1]) else { weight = 0; break }
                weight = q
            }
            if coding == "gzip" || coding == "x-gzip" { return weight > 0 }
            if coding == "*", wildcard == nil { wildcard = weight > 0 }
        }
        return wildcard ?? false
    }

    /// A weight as RFC 9110 12.4.2 writes it: `0` or `1`, then optionally a point and at most
    /// three digits (all 0 after a 1); nil for anything else.
    static func qValue(_ text: Substring) -> Double? {
        let bytes = Array(text.utf8), zero = UInt8(ascii: "0")
        guard let first = bytes.first, first == zero || first == zero + 1, bytes.count <= 5 else { return nil }
        var value = 0, scale = 1
        if bytes.count > 1 {
            guard bytes[1] == UInt8(ascii: ".") else { return nil }
            for digit in bytes.dropFirst(2) {
                guard (zero...zero + 9).contains(digit) else { return nil }
                value = value * 10 + Int(digit - zero)
                scale *= 10
            }
        }
        if first == zero + 1 { return value == 0 ? 1 : nil }
        return Double(value) / Double(scale)
    }
}

private extension Substring {
    func trimmingWhitespace() -> Substring {
        var s = self
        while let c = s.first, c == " " || c == "\t" { s.removeFirst() }
        while let c = s.last, c == " " || c == "\t" { s.removeLast() }
        return s
    }
}
