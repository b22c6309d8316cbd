/// Reassembles RTMP messages from the chunk stream (RTMP specification 1.0, section 5.3).
///
/// Pure and incremental: feed any split of the bytes, then pull messages. Set Chunk Size and
/// Abort are protocol control for this layer, so they are applied here and also handed up.
public struct ChunkDecoder: Sendable {
    /// Largest message accepted; media frames above this are refused (a 4K keyframe is ~1 MiB).
    public static let maximumMessageSize = 8 * 1024 * 1024
    /// Largest chunk size a peer may set (the spec allows up to 2^31-1; nobody needs more).
    public static let maximumChunkSize: UInt32 = 16 * 1024 * 1024
    /// Most concurrently open chunk streams per connection.
    public static let maximumChunkStreams = 64

    /// What one connection may make this decoder hold. A connection starts with
    /// ``Limits/beforePublish`` (commands only: connect, createStream, publish are each well under
    /// 1 KiB) and gets ``Limits/publishing`` once it asked to publish, so a peer that never
    /// authenticates holds at most 8 × 64 KiB of partial messages, not 64 × 8 MiB.
    public struct Limits: Sendable, Equatable {
        public var maximumMessageSize: Int
        public var maximumChunkStreams: Int
        public init(maximumMessageSize: Int, maximumChunkStreams: Int) {
            self.maximumMessageSize = maximumMessageSize
            self.maximumChunkStreams = maximumChunkStreams
        }
        public static let beforePublish = Limits(maximumMessageSize: 64 * 1024, maximumChunkStreams: 8)
        public static let publishing = Limits(maximumMessageSize: ChunkDecoder.maximumMessageSize, maximumChunkStreams: ChunkDecoder.maximumChunkStreams)
    }

    public var limits: Limits

    private struct StreamState: Sendable {
        var timestamp: UInt32 = 0
        var delta: UInt32 = 0
        var length: Int = 0
        var typeID: UInt8 = 0
        var messageStreamID: UInt32 = 0
        var extended = false
        /// The extended timestamp field of the last type 0-2 header on this chunk stream.
        var extendedField: UInt32 = 0
        /// Payload bytes of the message in progress received so far.
        var received = 0
        var inProgress = false
    }

    public private(set) var chunkSize: Int = 128
    private var states: [UInt32: StreamState] = [:]
    /// Partial payloads by chunk stream, kept apart from the small header state so appending a
    /// chunk mutates the buffer in place instead of copying the message so far.
    private var partial: [UInt32: [UInt8]] = [:]
    private var buffer: [UInt8] = []
    private var index = 0
    /// Total bytes fed so far (for Acknowledgement).
    public private(set) var bytesReceived: UInt64 = 0

    public init(limits: Limits = .publishing) { self.limits = limits }

    /// Appends received bytes (straight from the socket's buffer: no intermediate array).
    public mutating func feed(_ bytes: UnsafeRawBufferPointer) { append(bytes) }

    public mutating func feed(_ bytes: [UInt8]) { append(bytes) }

    /// Any other collection (slices in tests and tools) goes through an array: generic code
    /// called from another module is not specialised and would copy byte by byte.
    public mutating func feed<C: Collection<UInt8>>(_ bytes: C) { append(Array(bytes)) }

    /// Specialised here, in the module, for each of the concrete feeds above.
    private mutating func append<C: Collection<UInt8>>(_ bytes: C) {
        compact()
        buffer.append(contentsOf: bytes)
        bytesReceived += UInt64(bytes.count)
    }

    /// Drops consumed bytes: all of them once everything was consumed (cheap, and the common
    /// case when reads end on a message boundary), else the front once it is most of the buffer.
    private mutating func compact() {
        if index == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            index = 0
        } else if index > 65536, index > buffer.count / 2 {
            buffer.removeFirst(index)
            index = 0
        }
    }

    /// Bytes buffered but not yet consumed.
    public var bufferedByteCount: Int { buffer.count - index }

    /// The next complete message, or nil when more bytes are needed.
    public mutating func nextMessage() throws -> RTMPMessage? {
        while true {
            guard let (message, consumed) = try parseChunk(at: index) else { return nil }
            index = consumed
            if let message {
                if message.typeID == RTMPMessageType.setChunkSize.rawValue, message.payload.count >= 4 {
                    let size = (UInt32(message.payload[0]) << 24 | UInt32(message.payload[1]) << 16 | UInt32(message.payload[2]) << 8 | UInt32(message.payload[3])) & 0x7FFF_FFFF
                    guard size >= 1, size <= Self.maximumChunkSize else {
                        throw ChunkDecoderError(reason: .invalidChunkSize(size))
                    }
                    chunkSize = Int(size)
                } else if message.typeID == RTMPMessageType.abort.rawValue, message.payload.count >= 4 {
                    let csid = UInt32(message.payload[0]) << 24 | UInt32(message.payload[1]) << 16 | UInt32(message.payload[2]) << 8 | UInt32(message.payload[3])
                    partial[csid] = nil
                    states[csid]?.inProgress = false
                    states[csid]?.received = 0
                }
                return message
            }
        }
    }

    /// Parses one chunk starting at `start`. Returns nil if incomplete; otherwise the message it
    /// completed (if any) and the new read index.
    private mutating func parseChunk(at start: Int) throws -> (RTMPMessage?, Int)? {
        var p = start
        let end = buffer.count
        guard p < end else { return nil }
        let first = buffer[p]; p += 1
        let fmt = first >> 6
        var csid = UInt32(first & 0x3F)
        if csid == 0 {
            guard p + 1 <= end else { return nil }
            csid = 64 + UInt32(buffer[p]); p += 1
        } else if csid == 1 {
            guard p + 2 <= end else { return nil }
            csid = 64 + UInt32(buffer[p]) + UInt32(buffer[p + 1]) * 256; p += 2
        }
        let headerSize = [11, 7, 3, 0][Int(fmt)]
        guard p + headerSize <= end else { return nil }

        var state: StreamState
        if let existing = states[csid] {
            state = existing
        } else {
            guard fmt == 0 else { throw ChunkDecoderError(reason: .missingPreviousHeader(chunkStreamID: csid)) }
            guard states.count < limits.maximumChunkStreams else { throw ChunkDecoderError(reason: .tooManyChunkStreams) }
            state = StreamState()
        }

        var timestampField: UInt32 = 0
        if fmt <= 2 {
            timestampField = u24(p)
        }
        if fmt <= 1 {
            state.length = Int(u24(p + 3))
            state.typeID = buffer[p + 6]
        }
        if fmt == 0 {
            state.messageStreamID = UInt32(buffer[p + 7]) | UInt32(buffer[p + 8]) << 8 | UInt32(buffer[p + 9]) << 16 | UInt32(buffer[p + 10]) << 24
        }
        p += headerSize

        if fmt <= 2 {
            state.extended = timestampField == 0xFF_FFFF
        }
        if state.extended {
            // The spec (5.3.1.3) has type 3 chunks repeat the extended timestamp when the stream's
            // last type 0-2 header carried one, and ffmpeg and librtmp do; some encoders (old
            // HaishinKit, some hardware) omit it. For type 3, take the 4 bytes as the field only
            // when they equal the last one, otherwise they are payload.
            guard p + 4 <= end else { return nil }
            let ext = UInt32(buffer[p]) << 24 | UInt32(buffer[p + 1]) << 16 | UInt32(buffer[p + 2]) << 8 | UInt32(buffer[p + 3])
            if fmt <= 2 {
                timestampField = ext
                state.extendedField = ext
                p += 4
            } else if ext == state.extendedField {
                p += 4
            }
        }

        // Types 0-2 always begin a new message (a partial one on this chunk stream is dropped);
        // type 3 continues the message in progress or repeats the previous header.
        let startsMessage = !state.inProgress || fmt <= 2
        switch fmt {
        case 0:
            state.timestamp = timestampField
            state.delta = 0
        case 1, 2:
            state.delta = timestampField
            if startsMessage { state.timestamp &+= timestampField }
        default:
            if startsMessage { state.timestamp &+= state.delta }
        }

        guard state.length <= limits.maximumMessageSize else {
            throw ChunkDecoderError(reason: .messageTooLarge(state.length))
        }
        if startsMessage { state.received = 0 }
        let want = max(0, min(chunkSize, state.length - state.received))
        guard p + want <= end else { return nil }
        let chunk = buffer[p..<p + want]
        p += want

        if startsMessage && want >= state.length {
            // The whole message in one chunk (most audio, small frames): no reassembly.
            partial[csid] = nil
            state.inProgress = false
            states[csid] = state
            return (RTMPMessage(chunkStreamID: csid, timestamp: state.timestamp, typeID: state.typeID, messageStreamID: state.messageStreamID, payload: Array(chunk)), p)
        }
        if startsMessage {
            // Room for what has come, not for what the header claims: a peer announcing an
            // 8 MiB message and sending one chunk must not cost 8 MiB.
            var fresh: [UInt8] = []
            fresh.reserveCapacity(min(state.length, max(chunkSize, 4096) * 4))
            partial[csid] = fresh
        }
        partial[csid, default: []].append(contentsOf: chunk)
        state.received += want
        if state.received >= state.length {
            let payload = partial.removeValue(forKey: csid) ?? []
            state.inProgress = false
            states[csid] = state
            return (RTMPMessage(chunkStreamID: csid, timestamp: state.timestamp, typeID: state.typeID, messageStreamID: state.messageStreamID, payload: payload), p)
        }
        state.inProgress = true
        states[csid] = state
        return (nil, p)
    }

    private func u24(_ p: Int) -> UInt32 {
        UInt32(buffer[p]) << 16 | UInt32(buffer[p + 1]) << 8 | UInt32(buffer[p + 2])
    }
}
