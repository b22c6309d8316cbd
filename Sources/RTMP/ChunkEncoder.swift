import BinaryCoding

/// Splits messages into chunks (RTMP specification 1.0, section 5.3): a type 0 header for the
/// first chunk, type 3 for the rest, extended timestamps where needed.
public struct ChunkEncoder: Sendable {
    public private(set) var chunkSize: Int = 128

    public init() {}

    /// Changes the outgoing chunk size; send ``RTMPMessage/setChunkSize(_:)`` first.
    public mutating func setChunkSize(_ size: Int) {
        precondition(size >= 1 && size <= Int(ChunkDecoder.maximumChunkSize))
        chunkSize = size
    }

    public func encode(_ message: RTMPMessage) -> [UInt8] {
        var w = ByteWriter(capacity: message.payload.count + 16)
        let extended = message.timestamp >= 0xFF_FFFF
        writeBasicHeader(fmt: 0, csid: message.chunkStreamID, into: &w)
        w.u24(extended ? 0xFF_FFFF : message.timestamp)
        w.u24(UInt32(message.payload.count))
        w.u8(message.typeID)
        w.u32LE(message.messageStreamID)
        if extended { w.u32(message.timestamp) }
        var offset = 0
        repeat {
            if offset > 0 {
                writeBasicHeader(fmt: 3, csid: message.chunkStreamID, into: &w)
                if extended { w.u32(message.timestamp) }
            }
            let n = min(chunkSize, message.payload.count - offset)
            w.append(message.payload[offset..<offset + n])
            offset += n
        } while offset < message.payload.count
        return w.bytes
    }

    private func writeBasicHeader(fmt: UInt8, csid: UInt32, into w: inout ByteWriter) {
        switch csid {
        case 2...63: w.u8(fmt << 6 | UInt8(csid))
        case 64...319: w.u8(fmt << 6); w.u8(UInt8(csid - 64))
        default:
            let v = csid - 64
            w.u8(fmt << 6 | 1); w.u8(UInt8(v & 0xFF)); w.u8(UInt8(v >> 8 & 0xFF))
        }
    }
}
