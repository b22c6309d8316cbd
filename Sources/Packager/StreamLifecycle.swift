/// A packaged stream's life on this packager, as a pure decider with the clock as a parameter:
/// when a live stream that gets nothing is ended, and when an ended stream's package leaves
/// memory. The pipeline (``PackagingPipeline``) reports starts, ends and, once a tick, which
/// streams had media since the last one (units only set a flag: no clock read per unit), and
/// carries out the actions.
///
/// - A live stream with no media for ``idleEnd`` is ended here (its playlists get ENDLIST and the
///   retention starts): its transcoder went away without a StreamEnd (ingest or the worker died,
///   or the stream moved to another packager while this one was thought gone). Longer than
///   ingest's reconnect window (10 s) plus a worker failover, so a publisher's stall, a
///   reconnect or a worker's kill -9 never ends a show.
/// - An ended stream stays servable for the retention (players finish its last segments; a show
///   restarted within it continues the package after a discontinuity), then is forgotten,
///   unless it went live again.
struct StreamLifecycle: Sendable {
    /// The packager's `--idle-end` unless given.
    static let defaultIdleEnd: Duration = .seconds(30)

    enum Action: Sendable, Equatable {
        /// End the live stream: nothing came for ``idleEnd``.
        case end(streamID: Int64, reason: String)
        /// Drop the ended package from memory (and its DVR files).
        case forget(key: String)
    }

    let endedRetention: Duration
    let idleEnd: Duration
    /// Live streams by id, with their package key.
    private var live: [Int64: String] = [:]
    private var silentSince: [Int64: ContinuousClock.Instant] = [:]
    private var endedAt: [String: ContinuousClock.Instant] = [:]

    init(endedRetention: Duration, idleEnd: Duration = defaultIdleEnd) {
        self.endedRetention = endedRetention
        self.idleEnd = idleEnd
    }

    enum Claim: Sendable, Equatable {
        case accept
        /// Not merged: the key is another live stream's, or the id is live under another key.
        case refuse(reason: String)
    }

    /// Whose media a package takes. In the catalog a stream id and its key (`tenant/stream`) go
    /// together for good, so while a stream is live here its key takes announces of that id
    /// only, and that id announces that key only. A package that ended may be taken by another
    /// id (a stream deleted and made again under the same name).
    func claim(streamID: Int64, key: String) -> Claim {
        if let owned = live[streamID], owned != key {
            return .refuse(reason: "stream \(streamID) is live here as \(owned)")
        }
        if let owner = live.first(where: { $0.value == key && $0.key != streamID })?.key {
            return .refuse(reason: "\(key) is live here as stream \(owner)")
        }
        return .accept
    }

    mutating func started(_ id: Int64, key: String) {
        live[id] = key
        silentSince[id] = nil
    }

    mutating func ended(_ id: Int64, at now: ContinuousClock.Instant) {
        guard let key = live.removeValue(forKey: id) else { return }
        silentSince[id] = nil
        endedAt[key] = now
    }

    /// Once a tick: `heard` are the live streams that had media since the last tick.
    mutating func tick(now: ContinuousClock.Instant, heard: Set<Int64>) -> [Action] {
        var actions: [Action] = []
        for id in live.keys.sorted() {
            if heard.contains(id) {
                silentSince[id] = nil
                continue
            }
            let since = silentSince[id] ?? now
            silentSince[id] = since
            if now - since > idleEnd {
                actions.append(.end(streamID: id, reason: "no media for \(idleEnd.components.seconds) s"))
            }
        }
        let liveKeys = Set(live.values)
        for key in endedAt.keys.sorted() where now - endedAt[key]! > endedRetention {
            endedAt[key] = nil
            if !liveKeys.contains(key) { actions.append(.forget(key: key)) }
        }
        return actions
    }
}
