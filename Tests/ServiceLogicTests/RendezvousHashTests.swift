import StorecastRuntime
import Testing

/// Scores checked against an independent Python implementation (FNV-1a 64 over key, NUL, node;
/// splitmix64 finaliser).
@Suite struct RendezvousHashTests {
    static let golden: [(key: String, node: String, score: UInt64)] = [
        ("shop/launch", "packager-a", 0xd371_87d8_4d55_8604),
        ("shop/launch", "packager-b", 0xfbf0_5158_85fc_1f92),
        ("brand/show-1", "packager-a", 0x3624_7032_7a77_1b71),
        ("", "", 0x25fc_6dd3_6ce0_4b20),
    ]

    @Test func scoresMatchTheGoldenVectors() {
        for row in Self.golden { #expect(RendezvousHash.score(key: row.key, node: row.node) == row.score, "\(row)") }
    }

    static let owners: [(key: String, threeNodes: String, twoNodes: String)] = [
        ("shop/show-1", "packager-c", "packager-b"),
        ("shop/show-2", "packager-c", "packager-b"),
        ("shop/show-3", "packager-a", "packager-a"),
        ("shop/launch", "packager-b", "packager-b"),
        ("brand/live", "packager-a", "packager-a"),
    ]

    @Test func ownersMatchTheGoldenTable() {
        for row in Self.owners {
            #expect(RendezvousHash.owner(of: row.key, among: ["packager-a", "packager-b", "packager-c"]) == row.threeNodes, "\(row.key)")
            #expect(RendezvousHash.owner(of: row.key, among: ["packager-b", "packager-a"]) == row.twoNodes, "order of the list does not matter: \(row.key)")
        }
        #expect(RendezvousHash.owner(of: "x", among: []) == nil)
    }

    @Test func spreadsEvenlyAndMovesOnlyTheLeaversStreams() {
        let nodes = ["packager-a", "packager-b", "packager-c"]
        let keys = (0..<3000).map { "tenant-\($0 % 37)/show-\($0)" }
        let before = Dictionary(uniqueKeysWithValues: keys.map { ($0, RendezvousHash.owner(of: $0, among: nodes)!) })
        for node in nodes {
            let share = Double(before.values.filter { $0 == node }.count) / Double(keys.count)
            #expect(abs(share - 1.0 / 3.0) < 0.04, "\(node) holds \(share)")
        }
        let after = Dictionary(uniqueKeysWithValues: keys.map { ($0, RendezvousHash.owner(of: $0, among: ["packager-a", "packager-c"])!) })
        let moved = keys.filter { before[$0] != after[$0] }
        #expect(moved.allSatisfy { before[$0] == "packager-b" }, "only packager-b's streams move")
        #expect(moved.count == before.values.filter { $0 == "packager-b" }.count)
    }
}
