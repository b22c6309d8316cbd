/// Merges Prometheus text expositions from many processes into one: every sample gets
/// `service` and `node` labels, and each metric family's HELP/TYPE lines appear once. Pure.
public enum ExpositionMerger {
    public struct Source: Sendable, Equatable {
        public var service: String
        public var node: String
        public var exposition: String
        public init(service: String, node: String, exposition: String) {
            self.service = service
            self.node = node
            self.exposition = exposition
        }
    }

    public static func merge(_ sources: [Source]) -> String {
        var order: [String] = []
        var meta: [String: [String]] = [:]
        var samples: [String: [String]] = [:]
        for source in sources {
            let extra = "service=\"\(escape(source.service))\",node=\"\(escape(source.node))\""
            for line in source.exposition.split(separator: "\n", omittingEmptySubsequences: true) {
                if line.hasPrefix("#") {
                    let parts = line.split(separator: " ", maxSplits: 3)
                    guard parts.count >= 3, parts[1] == "HELP" || parts[1] == "TYPE" else { continue }
                    let family = String(parts[2])
                    if meta[family] == nil { order.append(family); meta[family] = [] }
                    if !(meta[family]!.contains { $0.hasPrefix("# \(parts[1]) ") }) { meta[family]!.append(String(line)) }
                    continue
                }
                guard let (name, labelled) = relabel(String(line), extra: extra) else { continue }
                let family = familyName(name, known: meta)
                if meta[family] == nil { order.append(family); meta[family] = [] }
                samples[family, default: []].append(labelled)
            }
        }
        var out: [String] = []
        for family in order {
            out += meta[family] ?? []
            out += samples[family] ?? []
        }
        return out.isEmpty ? "" : out.joined(separator: "\n") + "\n"
    }

    /// `name{a="b"} 1` -> `name{service="x",node="y",a="b"} 1`. Nil for a malformed line, and
    /// for one that sets `service` or `node` itself (a process cannot speak for another: a
    /// duplicate label would also make Prometheus refuse the whole scrape).
    static func relabel(_ line: String, extra: String) -> (String, String)? {
        if let brace = line.firstIndex(of: "{") {
            let name = String(line[..<brace])
            guard isMetricName(name) else { return nil }
            let labels = line[line.index(after: brace)...]
            if labels.hasPrefix("service=") || labels.hasPrefix("node=") || labels.contains(",service=") || labels.contains(",node=") { return nil }
            let rest = line[line.index(after: brace)...]
            let inner = rest.hasPrefix("}") ? "" : ","
            return (name, "\(name){\(extra)\(inner)\(rest)")
        }
        guard let space = line.firstIndex(of: " ") else { return nil }
        let name = String(line[..<space])
        guard isMetricName(name) else { return nil }
        return (name, "\(name){\(extra)}\(line[space...])")
    }

    /// Histogram and summary samples (`_bucket`, `_sum`, `_count`) belong to their family.
    static func familyName(_ sample: String, known: [String: [String]]) -> String {
        for suffix in ["_bucket", "_sum", "_count"] where sample.hasSuffix(suffix) {
            let base = String(sample.dropLast(suffix.count))
            if known[base] != nil { return base }
        }
        return sample
    }

    /// Prometheus's metric name rule: `[a-zA-Z_:][a-zA-Z0-9_:]*`.
    static func isMetricName(_ name: String) -> Bool {
        guard let first = name.utf8.first, !(first >= UInt8(ascii: "0") && first <= UInt8(ascii: "9")) else { return false }
        return name.utf8.allSatisfy { b in
            (b >= UInt8(ascii: "a") && b <= UInt8(ascii: "z")) || (b >= UInt8(ascii: "A") && b <= UInt8(ascii: "Z"))
                || (b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9")) || b == UInt8(ascii: "_") || b == UInt8(ascii: ":")
        }
    }

    static func escape(_ s: String) -> String {
        s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"").replacingOccurrences(of: "\n", with: "\\n")
    }
}
