import BinaryCoding
/// RTMP message type IDs (RTMP specification 1.0, sections 5.4 and 7.1).
public enum RTMPMessageType: UInt8, Sendable {
    case setChunkSize = 1
    case abort = 2
    case acknowledgement = 3
    case userControl = 4
    case windowAcknowledgementSize = 5
    case setPeerBandwidth = 6
    case audio = 8
    case video = 9
    case amf3Data = 15
    case amf3Command = 17
    case amf0Data = 18
    case amf0Command = 20
    case aggregate = 22
}

/// One reassembled RTMP message: what the chunk layer hands up and takes down.
public struct RTMPMessage: Equatable, Sendable {
    public var chunkStreamID: UInt32
    /// Absolute 32-bit timestamp in milliseconds, as on the wire (wraps).
    public var timestamp: UInt32
    public var typeID: UInt8
    public var messageStreamID: UInt32
    public var payload: [UInt8]

    public init(chunkStreamID: UInt32, timestamp: UInt32, typeID: UInt8, messageStreamID: UInt32, payload: [UInt8]) {
        self.chunkStreamID = chunkStreamID
        self.timestamp = timestamp
        self.typeID = typeID
        self.messageStreamID = messageStreamID
        self.payload = payload
    }

    public var type: RTMPMessageType? { RTMPMessageType(rawValue: typeID) }
}

/// Conventional chunk stream IDs for what the server sends.
public enum RTMPChunkStream {
    public static let control: UInt32 = 2
    public static let command: UInt32 = 3
    public static let status: UInt32 = 5
}

extension RTMPMessage {
    static func control(_ type: RTMPMessageType, _ payload: [UInt8]) -> RTMPMessage {
        RTMPMessage(chunkStreamID: RTMPChunkStream.control, timestamp: 0, typeID: type.rawValue, messageStreamID: 0, payload: payload)
    }

    public static func setChunkSize(_ size: UInt32) -> RTMPMessage { .control(.setChunkSize, (size & 0x7FFF_FFFF).bigEndianBytes) }
    public static func windowAcknowledgementSize(_ size: UInt32) -> RTMPMessage { .control(.windowAcknowledgementSize, size.bigEndianBytes) }
    public static func acknowledgement(_ sequence: UInt32) -> RTMPMessage { .control(.acknowledgement, sequence.bigEndianBytes) }
    /// Limit type 2 = dynamic.
    public static func setPeerBandwidth(_ size: UInt32, limitType: UInt8 = 2) -> RTMPMessage {
        .control(.setPeerBandwidth, size.bigEndianBytes + [limitType])
    }
    /// User Control event StreamBegin (event type 0).
    public static func streamBegin(_ streamID: UInt32) -> RTMPMessage { .control(.userControl, [0, 0] + streamID.bigEndianBytes) }
    /// User Control event PingResponse (event type 7).
    public static func pingResponse(_ timestamp: UInt32) -> RTMPMessage { .control(.userControl, [0, 7] + timestamp.bigEndianBytes) }

    public static func command(_ values: [AMF0Value], streamID: UInt32 = 0, chunkStreamID: UInt32 = RTMPChunkStream.command) -> RTMPMessage {
        RTMPMessage(chunkStreamID: chunkStreamID, timestamp: 0, typeID: RTMPMessageType.amf0Command.rawValue, messageStreamID: streamID, payload: AMF0.encode(values))
    }
}

