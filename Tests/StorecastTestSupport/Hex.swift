/// Hex text <-> bytes for golden vectors. Spaces and newlines in the text are ignored.
public enum Hex {
    public static func bytes(_ text: String) -> [UInt8] {
        let digits = text.filter { $0.isHexDigit }
        precondition(digits.count % 2 == 0, "odd hex length in golden vector")
        var out: [UInt8] = []
        var it = digits.makeIterator()
        while let a = it.next(), let b = it.next() { out.append(UInt8(String([a, b]), radix: 16)!) }
        return out
    }

    public static func string(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef")
        return String(bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0xF)]] })
    }
}
