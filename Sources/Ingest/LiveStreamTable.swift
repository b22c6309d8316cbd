/// Where a stream's timeline stood when its publisher went away, so a reconnect continues it.
public struct StreamTimeline: Sendable, Equatable {
    /// Last decode timestamp sent downstream (ms, session timeline).
    public var lastDts: Int64
    public var lastSequence: UInt64
    public init(lastDts: Int64, lastSequence: UInt64) {
        self.lastDts = lastDts
        self.lastSequence = lastSequence
    }
}

/// Which connection publishes each live stream, and which streams wait in their reconnect
/// window (mobile publishers drop and come back when switching from Wi-Fi to LTE). Pure: time is
/// a parameter; the ingest wraps it in a lock.
public struct LiveStreamTable: Sendable {
    public struct Configuration: Sendable, Equatable {
        /// A publisher that drops and returns within this window continues the same session.
        public var reconnectWindow: Duration
        /// A new publish takes over a live one only if the old connection sent nothing for this long.
        public var takeoverIdle: Duration
        public init(reconnectWindow: Duration = .seconds(10), takeoverIdle: Duration = .seconds(2)) {
            self.reconnectWindow = reconnectWindow
            self.takeoverIdle = takeoverIdle
        }
    }

    public enum Claim: Sendable, Equatable {
        /// No live session: start one (after the quota check).
        case new
        /// The stream was waiting in its reconnect window: continue its session.
        case resume(sessionID: Int64, timeline: StreamTimeline?, gap: Duration)
        /// A half-dead connection held the stream: it is replaced (`previousOwner` must be closed).
        case takeover(sessionID: Int64, previousOwner: Int, timeline: StreamTimeline?, gap: Duration)
        /// Another connection is publishing and alive.
        case busy(remote: String)
    }

    enum State: Sendable, Equatable {
        case publishing(owner: Int, remote: String, lastMedia: ContinuousClock.Instant)
        case reconnecting(since: ContinuousClock.Instant, window: Duration, timeline: StreamTimeline?)
    }

    struct Entry: Sendable, Equatable {
        var sessionID: Int64
        var state: State
        var timeline: StreamTimeline?
        /// Bumped on every change of owner, so a stale expiry does nothing.
        var generation: Int
    }

    public let configuration: Configuration
    private(set) var entries: [Int64: Entry] = [:]

    public init(configuration: Configuration = .init()) {
        self.configuration = configuration
    }

    /// What a publish for `stream` means now. Call ``publishing(_:sessionID:owner:remote:now:)``
    /// once the publish is accepted.
    public func claim(_ stream: Int64, now: ContinuousClock.Instant) -> Claim {
        guard let entry = entries[stream] else { return .new }
        switch entry.state {
        case .reconnecting(let since, let window, let timeline):
            return now - since <= window
                ? .resume(sessionID: entry.sessionID, timeline: timeline, gap: now - since)
                : .new
        case .publishing(let owner, let remote, let lastMedia):
            return now - lastMedia >= configuration.takeoverIdle
                ? .takeover(sessionID: entry.sessionID, previousOwner: owner, timeline: entry.timeline, gap: now - lastMedia)
                : .busy(remote: remote)
        }
    }

    public mutating func publishing(_ stream: Int64, sessionID: Int64, owner: Int, remote: String, now: ContinuousClock.Instant) {
        let generation = (entries[stream]?.generation ?? 0) + 1
        entries[stream] = Entry(sessionID: sessionID, state: .publishing(owner: owner, remote: remote, lastMedia: now), timeline: entries[stream]?.timeline, generation: generation)
    }

    /// Media arrived from `owner`: it is alive, and this is where its timeline stands.
    public mutating func media(_ stream: Int64, owner: Int, timeline: StreamTimeline, now: ContinuousClock.Instant) {
        guard var entry = entries[stream], case .publishing(owner, let remote, _) = entry.state else { return }
        entry.state = .publishing(owner: owner, remote: remote, lastMedia: now)
        entry.timeline = timeline
        entries[stream] = entry
    }

    /// The owner's connection dropped without unpublishing: it may come back within `window`
    /// (the stream's own, else the configuration's). Returns the generation to expire later, or
    /// nil if `owner` no longer held the stream (it was taken over).
    public mutating func dropped(_ stream: Int64, owner: Int, window: Duration? = nil, now: ContinuousClock.Instant) -> Int? {
        guard var entry = entries[stream], case .publishing(owner, _, _) = entry.state else { return nil }
        entry.state = .reconnecting(since: now, window: window ?? configuration.reconnectWindow, timeline: entry.timeline)
        entry.generation += 1
        entries[stream] = entry
        return entry.generation
    }

    /// The reconnect window of `generation` ran out: returns the session to end, if it still waits.
    public mutating func expire(_ stream: Int64, generation: Int) -> Int64? {
        guard let entry = entries[stream], entry.generation == generation, case .reconnecting = entry.state else { return nil }
        entries.removeValue(forKey: stream)
        return entry.sessionID
    }

    /// The owner unpublished: the session ends now. Returns its id if `owner` held the stream.
    public mutating func unpublished(_ stream: Int64, owner: Int) -> Int64? {
        guard let entry = entries[stream], case .publishing(owner, _, _) = entry.state else { return nil }
        entries.removeValue(forKey: stream)
        return entry.sessionID
    }
}
