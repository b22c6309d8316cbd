/// Comparing secrets without telling an attacker, by timing, how much of a guess was right.
public enum ConstantTime {
    /// Whether `a` and `b` are equal, in time that depends on their lengths only.
    public static func equal(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        var difference = x.count ^ y.count
        for i in 0..<min(x.count, y.count) { difference |= Int(x[i] ^ y[i]) }
        return difference == 0
    }
}
