@testable import StorecastRuntime
import Testing

/// Wrong secrets for one API key id, from anywhere: past the budget, wrong ones are refused
/// from memory and the right one still goes on to the check (golden table; clock as a parameter).
@Suite struct KeyIDThrottleTests {
    enum Step { case wrong(at: Double), read(storedHash: String?, at: Double) }
    static let t0 = ContinuousClock.now
    static func at(_ s: Double) -> ContinuousClock.Instant { t0.advanced(by: .microseconds(Int((s * 1_000_000).rounded()))) }
    static let right = StreamKey.hash("right"), wrong = StreamKey.hash("wrong")
    static func wrongs(_ times: [Double]) -> [Step] { times.map { .wrong(at: $0) } }
    static let six = wrongs([0, 1, 2, 3, 4, 5])

    static let cases: [(name: String, steps: [Step], presented: String, at: Double, decision: KeyIDThrottle.Decision)] = [
        ("five wrong secrets are checked as usual", wrongs([0, 1, 2, 3, 4]), wrong, 4.1, .check),
        ("past the budget, the key's hash is read first", six, wrong, 5.1, .refresh),
        ("then a wrong secret is refused, not looked up", six + [.read(storedHash: right, at: 5.1)], wrong, 5.2, .refuse(wait: .milliseconds(800))),
        ("and the right secret goes on to the check", six + [.read(storedHash: right, at: 5.1)], right, 5.2, .check),
        ("no usable key by that id: every secret is refused", six + [.read(storedHash: nil, at: 5.1)], right, 5.2, .refuse(wait: .milliseconds(800))),
        ("the hash is read again after 5 s", six + [.read(storedHash: right, at: 5.1)] + wrongs([5.2, 6.3, 9]), wrong, 10.2, .refresh),
        ("the wait doubles with each refusal", six + [.read(storedHash: right, at: 5.1)] + wrongs([5.2, 6.3]), wrong, 6.4, .refuse(wait: .milliseconds(3900))),
        ("once the wait is over, the usual check again", six, wrong, 6.1, .check),
        ("another key id is not disturbed", six, wrong, 5.1, .check),
    ]

    @Test(arguments: cases.indices) func decisions(_ i: Int) {
        let c = Self.cases[i]
        var throttle = KeyIDThrottle()
        for step in c.steps {
            switch step {
            case .wrong(let t): throttle.failed("k1", now: Self.at(t))
            case .read(let hash, let t): throttle.remember("k1", storedHash: hash, now: Self.at(t))
            }
        }
        let id = c.name == "another key id is not disturbed" ? "k2" : "k1"
        #expect(throttle.decide(id, secretHash: c.presented, now: Self.at(c.at)) == c.decision, "\(c.name)")
    }

    /// Hashes are held for ids over their budget: when the memory is full, an id no longer over
    /// it goes first, and it never holds more than ``KeyIDThrottle/maximumMemos``.
    @Test func heldHashesAreBounded() {
        var throttle = KeyIDThrottle()
        throttle.remember("calm", storedHash: Self.right, now: Self.at(0))  // never over its budget
        for i in 1..<KeyIDThrottle.maximumMemos {
            for _ in 0..<6 { throttle.failed("k\(i)", now: Self.at(1 + Double(i) / 100_000)) }
            throttle.remember("k\(i)", storedHash: Self.right, now: Self.at(1 + Double(i) / 100_000))
        }
        #expect(throttle.heldHashes.count == KeyIDThrottle.maximumMemos && throttle.heldHashes.contains("calm"))
        for _ in 0..<6 { throttle.failed("k-new", now: Self.at(1.5)) }
        throttle.remember("k-new", storedHash: Self.right, now: Self.at(1.5))
        #expect(throttle.heldHashes.count == KeyIDThrottle.maximumMemos && !throttle.heldHashes.contains("calm") && throttle.heldHashes.contains("k-new"),
                "an id no longer over its budget goes first")
        for i in 0..<50 {
            for _ in 0..<6 { throttle.failed("flood\(i)", now: Self.at(1.6)) }
            throttle.remember("flood\(i)", storedHash: nil, now: Self.at(1.6))
        }
        #expect(throttle.heldHashes.count <= KeyIDThrottle.maximumMemos && throttle.heldHashes.contains("flood49"), "never more than the bound")
    }
}
