import BinaryCoding

public struct WireError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Reason: Equatable, Sendable {
        case truncated
        case unsupportedVersion(UInt8)
        case unknownKind(UInt8)
        case invalidField(String)
        case tooLarge(String)
    }
    public let reason: Reason
    public init(reason: Reason) { self.reason = reason }
    public var description: String { "wire message: \(reason)" }
}

/// Binary encoding of ``WireMessage``: `[version u8][kind u8][fields…]`, integers big-endian,
/// strings and blobs length-prefixed. See `schemas/wire.md`.
public enum WireCodec {
    public static let version: UInt8 = 1
    /// Largest access unit payload accepted (matches the RTMP message cap).
    public static let maximumPayload = 16 * 1024 * 1024
    public static let maximumTracks = 16
    public static let maximumExposition = 1024 * 1024
    /// ZeroMQ's ZMQ_MAXMSGSIZE per receiving socket, by what it receives (a bigger message drops
    /// the sender's connection): media (ingest → worker, worker → packager), control (worker →
    /// ingest: READY and heartbeats) and telemetry (every process → collector).
    public static let maximumMediaMessage: Int64 = 32 * 1024 * 1024
    public static let maximumControlMessage: Int64 = 64 * 1024
    public static let maximumTelemetryMessage: Int64 = Int64(maximumExposition) + 64 * 1024
    public static let maximumStreamsPerWorker = 4096
    public static let maximumThumbnail = 2 * 1024 * 1024
    /// Most messages in one ``WireMessage/batch(_:)``.
    public static let maximumBatch = 16_384
    /// Longest lease ticket (`u8` length; a ticket is 48 bytes today).
    public static let maximumLeaseTicket = 255
    /// Largest codec configuration (avcC, hvcC, AudioSpecificConfig…) a track may carry.
    public static let maximumConfig = 65_536

    public static func encode(_ message: WireMessage) -> [UInt8] {
        var w = ByteWriter(capacity: 64 + (message.payloadSize))
        encode(message, into: &w)
        return w.bytes
    }

    /// Appends the encoding of `message` (a nested batch is flattened into its parent: same
    /// messages, same order).
    public static func encode(_ message: WireMessage, into w: inout ByteWriter) {
        w.u8(version)
        w.u8(message.kind.rawValue)
        switch message {
        case .batch(let messages):
            let countAt = w.count
            w.u32(0)
            w.patchU32(at: countAt, UInt32(appendEntries(messages, into: &w)))
        case .streamAnnounce(let a):
            w.i64(a.streamID); w.i64(a.sessionID)
            w.string16(a.tenant); w.string16(a.streamName)
            w.u8(a.discontinuity ? 1 : 0)
            w.u8(UInt8(a.tracks.count))
            for t in a.tracks {
                w.u8(t.trackID); w.u8(t.kind.rawValue)
                w.string16(t.codec); w.string16(t.name)
                w.u32(t.timescale); w.u16(t.width); w.u16(t.height)
                w.u32(t.bitrate); w.u32(t.sampleRate); w.u8(t.channels)
                w.block32(t.config)
            }
            if !a.leaseTicket.isEmpty { w.u8(UInt8(min(a.leaseTicket.count, maximumLeaseTicket))); w.append(a.leaseTicket.prefix(maximumLeaseTicket)) }
        case .accessUnit(let u):
            w.i64(u.streamID); w.u8(u.trackID); w.u8(u.flags)
            w.u64(u.sequence); w.i64(u.dts); w.i32(u.compositionOffset)
            w.block32(u.data)
        case .streamEnd(let e):
            w.i64(e.streamID); w.string16(e.reason)
        case .thumbnail(let t):
            w.i64(t.streamID); w.i64(t.pts); w.u16(t.width); w.u16(t.height)
            w.block32(t.jpeg)
            if !t.placeholder.isEmpty { w.block32(t.placeholder) }  // over the limit, the receiver refuses it
        case .workerReady(let s), .workerHeartbeat(let s):
            w.string16(s.workerID); w.u16(s.capacity)
            w.u16(UInt16(s.streams.count))
            for id in s.streams { w.i64(id) }
        case .assign(let a):
            w.i64(a.streamID); w.string16(a.packagerEndpoint)
            if let p = a.profile {
                w.u8(1)
                w.string16(p.name); w.string16(p.preset); w.u8(p.gopSeconds); w.u8(p.lowLatency ? 1 : 0)
                w.u8(UInt8(p.rungs.count))
                for r in p.rungs { w.string16(r.name); w.u16(r.shortSide); w.u32(r.bitrate) }
            } else {
                w.u8(0)
            }
            // Optional trailing fields, each written when it or one after it is present.
            if let until = a.replayUntil { w.u8(1); w.i64(until) } else if !a.leaseTicket.isEmpty || a.ladderCeiling != nil { w.u8(0) }
            if !a.leaseTicket.isEmpty { w.u8(UInt8(min(a.leaseTicket.count, maximumLeaseTicket))); w.append(a.leaseTicket.prefix(maximumLeaseTicket)) } else if a.ladderCeiling != nil { w.u8(0) }
            if let ceiling = a.ladderCeiling { w.u16(ceiling) }
        case .release(let id):
            w.i64(id)
        case .leaseRenewal(let id, let ticket):
            w.i64(id)
            w.u8(UInt8(min(ticket.count, maximumLeaseTicket))); w.append(ticket.prefix(maximumLeaseTicket))
        case .telemetry(let t):
            w.string16(t.service); w.string16(t.node); w.u32(t.pid); w.u32(t.uptimeSeconds)
            w.block32(Array(t.exposition.utf8))
        }
    }

    /// Appends batch entries, `u32 length` and the message each (nested batches flattened);
    /// returns how many. Also ``WireBatchWriter``'s encoder.
    static func appendEntries(_ messages: [WireMessage], into w: inout ByteWriter) -> Int {
        var count = 0
        for message in messages {
            if case .batch(let inner) = message {
                count += appendEntries(inner, into: &w)
                continue
            }
            let lengthAt = w.count
            w.u32(0)
            encode(message, into: &w)
            w.patchU32(at: lengthAt, UInt32(w.count - lengthAt - 4))
            count += 1
        }
        return count
    }

    /// Decodes one message; any bad byte anywhere, also in one entry of a batch, throws.
    public static func decode(_ bytes: [UInt8]) throws -> WireMessage {
        var skipped: [WireError]?
        return try decode(bytes, nested: false, skipped: &skipped)
    }

    /// Decodes one message, but a batch entry that does not decode is left out and its error
    /// appended to `skipped`, so one bad entry does not take the rest of the batch with it (a
    /// batch's framing — its count and entry lengths — must still be sound). For receivers.
    public static func decode(_ bytes: [UInt8], skipping skipped: inout [WireError]) throws -> WireMessage {
        var collected: [WireError]? = []
        defer { skipped += collected! }
        return try decode(bytes, nested: false, skipped: &collected)
    }

    private static func decode(_ bytes: [UInt8], nested: Bool, skipped: inout [WireError]?) throws -> WireMessage {
        var r = ByteReader(bytes)
        do {
            let v = try r.u8()
            guard v == version else { throw WireError(reason: .unsupportedVersion(v)) }
            let rawKind = try r.u8()
            guard let kind = WireMessage.Kind(rawValue: rawKind) else { throw WireError(reason: .unknownKind(rawKind)) }
            let message: WireMessage
            switch kind {
            case .streamAnnounce:
                let streamID = try r.i64(), sessionID = try r.i64()
                let tenant = try slug(&r, "tenant"), name = try slug(&r, "stream")
                let discontinuity = try r.u8() != 0
                let count = Int(try r.u8())
                guard count <= maximumTracks else { throw WireError(reason: .tooLarge("tracks \(count)")) }
                var tracks: [TrackConfig] = []
                for _ in 0..<count {
                    let id = try r.u8()
                    let rawTrackKind = try r.u8()
                    guard let trackKind = TrackKind(rawValue: rawTrackKind) else { throw WireError(reason: .invalidField("track kind \(rawTrackKind)")) }
                    tracks.append(TrackConfig(
                        trackID: id, kind: trackKind, codec: try r.string16(), name: try slug(&r, "rendition"),
                        timescale: try r.u32(), width: try r.u16(), height: try r.u16(), bitrate: try r.u32(),
                        sampleRate: try r.u32(), channels: try r.u8(), config: try r.block32(limit: maximumConfig)))
                }
                let ticket = r.isAtEnd ? [] : try leaseTicket(&r)
                message = .streamAnnounce(StreamAnnounce(streamID: streamID, sessionID: sessionID, tenant: tenant, streamName: name, discontinuity: discontinuity, tracks: tracks, leaseTicket: ticket))
            case .accessUnit:
                message = .accessUnit(AccessUnit(
                    streamID: try r.i64(), trackID: try r.u8(), flags: try r.u8(), sequence: try r.u64(),
                    dts: try r.i64(), compositionOffset: try r.i32(), data: try r.block32(limit: maximumPayload)))
            case .streamEnd:
                message = .streamEnd(StreamEnd(streamID: try r.i64(), reason: try r.string16()))
            case .batch:
                guard !nested else { throw WireError(reason: .invalidField("batch inside a batch")) }
                let count = Int(try r.u32())
                guard count <= maximumBatch else { throw WireError(reason: .tooLarge("batch of \(count)")) }
                var messages: [WireMessage] = []
                messages.reserveCapacity(min(count, r.remaining / 6))  // an entry is at least 6 bytes
                for _ in 0..<count {
                    let entry = try r.block32(limit: r.remaining)
                    // Strict (skipped nil): a bad entry refuses the batch; lenient: it is left out.
                    do { messages.append(try decode(entry, nested: true, skipped: &skipped)) } catch let error as WireError where skipped != nil {
                        skipped?.append(error)
                    }
                }
                message = .batch(messages)
            case .thumbnail:
                var still = Thumbnail(streamID: try r.i64(), pts: try r.i64(), width: try r.u16(), height: try r.u16(),
                                      jpeg: try r.block32(limit: maximumThumbnail))
                if !r.isAtEnd { still.placeholder = try r.block32(limit: Thumbnail.maximumPlaceholder) }
                message = .thumbnail(still)
            case .workerReady, .workerHeartbeat:
                let id = try r.string16(), capacity = try r.u16()
                let count = Int(try r.u16())
                guard count <= maximumStreamsPerWorker else { throw WireError(reason: .tooLarge("streams \(count)")) }
                let streams = try (0..<count).map { _ in try r.i64() }
                let status = WorkerStatus(workerID: id, capacity: capacity, streams: streams)
                message = kind == .workerReady ? .workerReady(status) : .workerHeartbeat(status)
            case .assign:
                let streamID = try r.i64(), endpoint = try r.string16()
                var profile: TranscodeProfile?
                if try r.u8() != 0 {
                    let name = try slug(&r, "profile"), preset = try r.string16(), gop = try r.u8(), lowLatency = try r.u8() != 0
                    let count = Int(try r.u8())
                    guard count <= maximumTracks else { throw WireError(reason: .tooLarge("rungs \(count)")) }
                    let rungs = try (0..<count).map { _ in TranscodeProfile.Rung(name: try slug(&r, "rung"), shortSide: try r.u16(), bitrate: try r.u32()) }
                    profile = TranscodeProfile(name: name, rungs: rungs, preset: preset, gopSeconds: gop, lowLatency: lowLatency)
                }
                var replayUntil: Int64?
                if !r.isAtEnd, try r.u8() != 0 { replayUntil = try r.i64() }
                // An assign's ticket may be empty (length 0) only when a ladder ceiling follows.
                var ticket: [UInt8] = []
                if !r.isAtEnd {
                    ticket = try r.read(Int(try r.u8()))
                    if ticket.isEmpty, r.isAtEnd { throw WireError(reason: .invalidField("empty lease ticket")) }
                }
                var ceiling: UInt16?
                if !r.isAtEnd {
                    let side = try r.u16()
                    guard Assignment.ladderCeilings.contains(side) else { throw WireError(reason: .invalidField("ladder ceiling \(side)")) }
                    ceiling = side
                }
                message = .assign(Assignment(streamID: streamID, packagerEndpoint: endpoint, profile: profile, replayUntil: replayUntil, leaseTicket: ticket, ladderCeiling: ceiling))
            case .release:
                message = .release(streamID: try r.i64())
            case .leaseRenewal:
                message = .leaseRenewal(streamID: try r.i64(), ticket: try leaseTicket(&r))
            case .telemetry:
                message = .telemetry(Telemetry(
                    service: try r.string16(), node: try r.string16(), pid: try r.u32(), uptimeSeconds: try r.u32(),
                    exposition: String(decoding: try r.block32(limit: maximumExposition), as: UTF8.self)))
            }
            guard r.isAtEnd else { throw WireError(reason: .invalidField("\(r.remaining) trailing bytes")) }
            return message
        } catch is ByteReaderError {
            throw WireError(reason: .truncated)
        }
    }
}

extension WireCodec {
    /// A name that may become part of a path or URL, refused here unless it is a ``Slug``
    /// (so no receiver ever holds a tenant called `../../tmp`).
    fileprivate static func slug(_ r: inout ByteReader, _ what: String) throws -> String {
        let name = try r.string16()
        guard Slug.isValid(name) else { throw WireError(reason: .invalidField("\(what) name is not a slug (\(Slug.rule))")) }
        return name
    }

    /// `u8 length, bytes`: a lease ticket (the trailing field of `streamAnnounce` and `assign`,
    /// and `leaseRenewal`'s).
    fileprivate static func leaseTicket(_ r: inout ByteReader) throws -> [UInt8] {
        let count = Int(try r.u8())
        guard count > 0 else { throw WireError(reason: .invalidField("empty lease ticket")) }
        return try r.read(count)
    }
}

extension WireMessage {
    /// Bytes of the largest blob, to size the encoding buffer once.
    public var payloadSize: Int {
        switch self {
        case .accessUnit(let u): u.data.count
        case .streamAnnounce(let a): a.tracks.reduce(0) { $0 + $1.config.count + 64 }
        case .telemetry(let t): t.exposition.utf8.count
        case .thumbnail(let t): t.jpeg.count + t.placeholder.count
        case .batch(let messages): messages.reduce(0) { $0 + $1.payloadSize + 48 }
        default: 0
        }
    }
}

/// PUB/SUB topics (first frame of a published message).
public enum WireTopic {
    public static let telemetry: [UInt8] = Array("telemetry".utf8)
}
