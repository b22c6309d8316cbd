/// SplitMix64: a reproducible random source for fuzz-style tests (same seed, same bytes).
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    public mutating func bytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8.random(in: 0...255, using: &self) } }

    /// Flips, inserts and deletes a few bytes of `input` (mutation fuzzing seeded from golden data).
    public mutating func mutate(_ input: [UInt8]) -> [UInt8] {
        var out = input
        for _ in 0..<Int.random(in: 1...4, using: &self) {
            guard !out.isEmpty else { out = bytes(8); continue }
            let i = Int.random(in: 0..<out.count, using: &self)
            switch Int.random(in: 0..<3, using: &self) {
            case 0: out[i] = UInt8.random(in: 0...255, using: &self)
            case 1: out.insert(UInt8.random(in: 0...255, using: &self), at: i)
            default: out.remove(at: i)
            }
        }
        return out
    }

    /// Cuts `input` into pieces of random length (drip-feeding decoders).
    public mutating func randomSplits(_ input: [UInt8]) -> [[UInt8]] {
        var pieces: [[UInt8]] = []
        var i = 0
        while i < input.count {
            let n = Int.random(in: 1...max(1, min(700, input.count - i)), using: &self)
            pieces.append(Array(input[i..<i + n]))
            i += n
        }
        return pieces
    }
}
