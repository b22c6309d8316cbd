import BinaryCoding

/// What an FLV video or audio tag body says (FLV specification 10.1, annex E.4.3 and E.4.2).
public enum FLVMediaEvent: Equatable, Sendable {
    /// AVCDecoderConfigurationRecord: a (new) video configuration.
    case videoConfiguration(codec: VideoCodec, record: [UInt8])
    /// One access unit of length-prefixed NAL units.
    case videoFrame(codec: VideoCodec, keyframe: Bool, compositionTimeOffset: Int32, data: [UInt8])
    case videoEndOfSequence
    /// AudioSpecificConfig.
    case audioConfiguration(codec: AudioCodec, config: [UInt8])
    case audioFrame(codec: AudioCodec, data: [UInt8])
}

public enum VideoCodec: String, Sendable, Equatable { case h264 }
public enum AudioCodec: String, Sendable, Equatable { case aac }

public struct FLVTagError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Reason: Equatable, Sendable {
        case empty
        case truncated
        case unsupportedVideoCodec(UInt8)
        case unsupportedAudioFormat(UInt8)
        case unsupportedPacketType(UInt8)
    }
    public let reason: Reason
    public var description: String {
        switch reason {
        case .empty: "empty media tag"
        case .truncated: "truncated media tag"
        case .unsupportedVideoCodec(let id): "unsupported FLV video codec id \(id) (H.264 is supported)"
        case .unsupportedAudioFormat(let id): "unsupported FLV sound format \(id) (AAC is supported)"
        case .unsupportedPacketType(let t): "unsupported packet type \(t)"
        }
    }
}

/// Parses FLV tag bodies as carried in RTMP audio (8) and video (9) messages.
public enum FLVTag {
    public static func parseVideo(_ body: [UInt8]) throws -> FLVMediaEvent? {
        var r = ByteReader(body)
        do {
            guard !body.isEmpty else { throw FLVTagError(reason: .empty) }
            let head = try r.u8()
            let frameType = head >> 4
            let codecID = head & 0x0F
            if frameType == 5 { return nil }  // video info/command frame
            guard codecID == 7 else { throw FLVTagError(reason: .unsupportedVideoCodec(codecID)) }
            let packetType = try r.u8()
            let cts = try r.i24()
            switch packetType {
            case 0: return .videoConfiguration(codec: .h264, record: r.readRest())
            case 1: return .videoFrame(codec: .h264, keyframe: frameType == 1, compositionTimeOffset: cts, data: r.readRest())
            case 2: return .videoEndOfSequence
            default: throw FLVTagError(reason: .unsupportedPacketType(packetType))
            }
        } catch is ByteReaderError {
            throw FLVTagError(reason: .truncated)
        }
    }

    public static func parseAudio(_ body: [UInt8]) throws -> FLVMediaEvent {
        var r = ByteReader(body)
        do {
            guard !body.isEmpty else { throw FLVTagError(reason: .empty) }
            let head = try r.u8()
            let format = head >> 4
            guard format == 10 else { throw FLVTagError(reason: .unsupportedAudioFormat(format)) }
            let packetType = try r.u8()
            switch packetType {
            case 0: return .audioConfiguration(codec: .aac, config: r.readRest())
            case 1: return .audioFrame(codec: .aac, data: r.readRest())
            default: throw FLVTagError(reason: .unsupportedPacketType(packetType))
            }
        } catch is ByteReaderError {
            throw FLVTagError(reason: .truncated)
        }
    }
}
