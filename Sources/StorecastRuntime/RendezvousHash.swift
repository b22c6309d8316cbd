/// Highest-random-weight (rendezvous) hashing: a stream belongs to the node with the highest
/// score for the pair. Every service that knows the same live nodes picks the same owner, and
/// when a node leaves only its own streams move. Pure.
public enum RendezvousHash {
    /// FNV-1a 64 over `key`, a NUL and `node`, then the splitmix64 finaliser so that similar
    /// names spread well.
    public static func score(key: String, node: String) -> UInt64 {
        var fnv = FNV1a()
        fnv.add(key.utf8)
        fnv.add(CollectionOfOne(0))
        fnv.add(node.utf8)
        var h = fnv.value
        h = (h ^ (h >> 30)) &* 0xbf58_476d_1ce4_e5b9
        h = (h ^ (h >> 27)) &* 0x94d0_49bb_1331_11eb
        return h ^ (h >> 31)
    }

    /// The owner of `key` among `nodes` (nil when there are none); ties go to the smaller name.
    public static func owner(of key: String, among nodes: [String]) -> String? {
        nodes.max { a, b in
            let (sa, sb) = (score(key: key, node: a), score(key: key, node: b))
            return sa == sb ? a > b : sa < sb
        }
    }
}
