import BinaryCoding

/// Every message that crosses a ZeroMQ socket between Storecast processes.
/// The byte layout is specified in `schemas/wire.md` and pinned by `schemas/wire/vectors.json`.
public enum WireMessage: Equatable, Sendable {
    // ingest -> transcoder (ROUTER -> DEALER) and transcoder -> packager (PUSH -> PULL)
    case streamAnnounce(StreamAnnounce)
    case accessUnit(AccessUnit)
    case streamEnd(StreamEnd)
    /// Several messages for one peer, handled in order exactly as if they had come one by one:
    /// ingest sends a worker everything of one turn of its loop as one ZeroMQ message (one
    /// hand-off to libzmq and a few large socket writes instead of one per frame). Never nested.
    case batch([WireMessage])
    // transcoder -> packager (PUSH -> PULL): the stories feed's preview image
    case thumbnail(Thumbnail)
    // transcoder <-> ingest control (DEALER <-> ROUTER), after the Paranoid Pirate pattern
    case workerReady(WorkerStatus)
    case workerHeartbeat(WorkerStatus)
    case assign(Assignment)
    case release(streamID: Int64)
    /// A fresh lease ticket for a stream the worker holds (same grant, later expiry), which its
    /// next announces carry instead of the assign's.
    case leaseRenewal(streamID: Int64, ticket: [UInt8])
    // every process -> metrics collector (PUB -> SUB)
    case telemetry(Telemetry)

    /// One-byte kind constants (the second byte of every message).
    public enum Kind: UInt8, Sendable {
        case streamAnnounce = 0x01
        case accessUnit = 0x02
        case streamEnd = 0x03
        case batch = 0x05
        case thumbnail = 0x04
        case workerReady = 0x10
        case workerHeartbeat = 0x11
        case assign = 0x12
        case release = 0x13
        case leaseRenewal = 0x14
        case telemetry = 0x30
    }

    public var kind: Kind {
        switch self {
        case .streamAnnounce: .streamAnnounce
        case .accessUnit: .accessUnit
        case .streamEnd: .streamEnd
        case .batch: .batch
        case .thumbnail: .thumbnail
        case .workerReady: .workerReady
        case .workerHeartbeat: .workerHeartbeat
        case .assign: .assign
        case .release: .release
        case .leaseRenewal: .leaseRenewal
        case .telemetry: .telemetry
        }
    }
}

public enum TrackKind: UInt8, Sendable { case video = 1, audio = 2 }

/// A track of a stream: the source's own tracks from ingest, or renditions from a transcoder.
public struct TrackConfig: Equatable, Sendable {
    public var trackID: UInt8
    public var kind: TrackKind
    /// "h264" or "aac".
    public var codec: String
    /// Rendition name ("720p", "audio", "source").
    public var name: String
    /// The name of the publisher's own video: ingest's source track, and the transcoder's
    /// passed-through rendition (the publisher's keyframes, not the ladder's).
    public static let sourceName = "source"
    public var isSource: Bool { name == Self.sourceName }
    /// Ticks per second of this track's timestamps.
    public var timescale: UInt32
    public var width: UInt16
    public var height: UInt16
    /// Target or measured bits per second (0 when unknown).
    public var bitrate: UInt32
    public var sampleRate: UInt32
    public var channels: UInt8
    /// avcC for H.264, AudioSpecificConfig for AAC.
    public var config: [UInt8]

    public init(trackID: UInt8, kind: TrackKind, codec: String, name: String, timescale: UInt32, width: UInt16 = 0, height: UInt16 = 0, bitrate: UInt32 = 0, sampleRate: UInt32 = 0, channels: UInt8 = 0, config: [UInt8]) {
        self.trackID = trackID
        self.kind = kind
        self.codec = codec
        self.name = name
        self.timescale = timescale
        self.width = width
        self.height = height
        self.bitrate = bitrate
        self.sampleRate = sampleRate
        self.channels = channels
        self.config = config
    }
}

/// Starts (or re-configures) a stream: everything a consumer needs before the first access unit.
public struct StreamAnnounce: Equatable, Sendable {
    public var streamID: Int64
    public var sessionID: Int64
    public var tenant: String
    public var streamName: String
    /// True when timestamps do not continue from the previous announce (reconnect, failover).
    public var discontinuity: Bool
    public var tracks: [TrackConfig]
    /// A worker's announce to a packager: the lease ticket of its `assign` (empty: none; ingest's
    /// announces to workers carry none). The packager takes the stream's media only from the
    /// worker a valid ticket names (docs/security.md).
    public var leaseTicket: [UInt8]

    public init(streamID: Int64, sessionID: Int64, tenant: String, streamName: String, discontinuity: Bool, tracks: [TrackConfig], leaseTicket: [UInt8] = []) {
        self.streamID = streamID
        self.sessionID = sessionID
        self.tenant = tenant
        self.streamName = streamName
        self.discontinuity = discontinuity
        self.tracks = tracks
        self.leaseTicket = leaseTicket
    }
}

/// One coded frame: H.264 as length-prefixed NAL units (4-byte), AAC as a raw frame.
public struct AccessUnit: Equatable, Sendable {
    public static let keyframeFlag: UInt8 = 0x01

    public var streamID: Int64
    public var trackID: UInt8
    public var flags: UInt8
    /// Per-stream sequence number, increasing by one per unit across tracks.
    public var sequence: UInt64
    /// Decode timestamp in the track's timescale, on the session's monotonic 64-bit timeline.
    public var dts: Int64
    /// pts - dts.
    public var compositionOffset: Int32
    public var data: [UInt8]

    public init(streamID: Int64, trackID: UInt8, flags: UInt8, sequence: UInt64, dts: Int64, compositionOffset: Int32, data: [UInt8]) {
        self.streamID = streamID
        self.trackID = trackID
        self.flags = flags
        self.sequence = sequence
        self.dts = dts
        self.compositionOffset = compositionOffset
        self.data = data
    }

    public var isKeyframe: Bool { flags & Self.keyframeFlag != 0 }
    public var pts: Int64 { dts + Int64(compositionOffset) }
}

/// A JPEG still of the source, taken every few seconds of stream time for feed previews.
public struct Thumbnail: Equatable, Sendable {
    public var streamID: Int64
    /// Presentation time of the source frame, 90 kHz.
    public var pts: Int64
    public var width: UInt16
    public var height: UInt16
    public var jpeg: [UInt8]
    /// The same picture as a tiny JPEG (16x9, or 9x16 upright) for the stories feed's first
    /// paint, at most ``maximumPlaceholder`` bytes; empty: none.
    public var placeholder: [UInt8]
    public static let maximumPlaceholder = 2048

    public init(streamID: Int64, pts: Int64, width: UInt16, height: UInt16, jpeg: [UInt8], placeholder: [UInt8] = []) {
        self.streamID = streamID
        self.pts = pts
        self.width = width
        self.height = height
        self.jpeg = jpeg
        self.placeholder = placeholder
    }
}

public struct StreamEnd: Equatable, Sendable {
    public var streamID: Int64
    public var reason: String
    public init(streamID: Int64, reason: String) {
        self.streamID = streamID
        self.reason = reason
    }
}

/// A transcoder worker's advertisement: who it is, what it can take, what it runs.
public struct WorkerStatus: Equatable, Sendable {
    public var workerID: String
    /// Capacity in slots (one slot = one 720p30 ladder).
    public var capacity: UInt16
    public var streams: [Int64]
    public init(workerID: String, capacity: UInt16, streams: [Int64]) {
        self.workerID = workerID
        self.capacity = capacity
        self.streams = streams
    }
}

public struct Assignment: Equatable, Sendable {
    public var streamID: Int64
    /// The packager endpoint the worker must push renditions to.
    public var packagerEndpoint: String
    /// The tenant's or stream's ladder profile; nil: the worker's own settings.
    public var profile: TranscodeProfile?
    /// Ingest time (ms) of the latest picture in the GOP snapshot that follows: units up to it
    /// may repeat what a previous worker already delivered (schemas/wire.md).
    public var replayUntil: Int64?
    /// Ingest's proof of this lease, which the worker copies into its announces to the packager
    /// (empty: none).
    public var leaseTicket: [UInt8]
    /// The tenant's largest rendition, as a short side in pixels (``ladderCeilings``); nil: none.
    public var ladderCeiling: UInt16?
    /// The short sides a ladder ceiling may have.
    public static let ladderCeilings: ClosedRange<UInt16> = 144...2160
    public init(streamID: Int64, packagerEndpoint: String, profile: TranscodeProfile? = nil, replayUntil: Int64? = nil, leaseTicket: [UInt8] = [], ladderCeiling: UInt16? = nil) {
        self.streamID = streamID
        self.packagerEndpoint = packagerEndpoint
        self.profile = profile
        self.replayUntil = replayUntil
        self.leaseTicket = leaseTicket
        self.ladderCeiling = ladderCeiling
    }
}

/// How one stream is transcoded, from a ladder profile in PostgreSQL.
public struct TranscodeProfile: Equatable, Sendable {
    public struct Rung: Equatable, Sendable {
        public var name: String
        /// Height for landscape sources, width for portrait ones.
        public var shortSide: UInt16
        public var bitrate: UInt32
        public init(name: String, shortSide: UInt16, bitrate: UInt32) {
            self.name = name
            self.shortSide = shortSide
            self.bitrate = bitrate
        }
    }

    public var name: String
    /// Largest first.
    public var rungs: [Rung]
    /// x264 preset.
    public var preset: String
    /// Seconds between aligned keyframes: 1 or 2.
    public var gopSeconds: UInt8
    /// x264's zerolatency tune (no lookahead, no frame threads).
    public var lowLatency: Bool

    public init(name: String, rungs: [Rung], preset: String, gopSeconds: UInt8, lowLatency: Bool) {
        self.name = name
        self.rungs = rungs
        self.preset = preset
        self.gopSeconds = gopSeconds
        self.lowLatency = lowLatency
    }
}

/// A process's heartbeat to the metrics collector, carrying its swift-metrics state as
/// Prometheus text exposition.
public struct Telemetry: Equatable, Sendable {
    public var service: String
    public var node: String
    public var pid: UInt32
    public var uptimeSeconds: UInt32
    public var exposition: String
    public init(service: String, node: String, pid: UInt32, uptimeSeconds: UInt32, exposition: String) {
        self.service = service
        self.node = node
        self.pid = pid
        self.uptimeSeconds = uptimeSeconds
        self.exposition = exposition
    }
}
