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
    /// A frame of a codec without a sequence header (MP3, G.711): its format travels with it.
    case codedAudioFrame(codec: AudioCodec, sampleRate: Int, channels: Int, data: [UInt8])
}

public enum VideoCodec: String, Sendable, Equatable {
    case h264
    case hevc
    case av1

    /// Enhanced RTMP FourCC.
    public init?(fourCC: UInt32) {
        switch fourCC {
        case 0x6176_6331: self = .h264  // 'avc1'
        case 0x6876_6331: self = .hevc  // 'hvc1'
        case 0x6176_3031: self = .av1  // 'av01'
        default: return nil
        }
    }
}
/// Audio codecs ingest takes. Anything but AAC is transcoded to AAC by the transcoder.
public enum AudioCodec: String, Sendable, Equatable {
    case aac
    case mp3
    /// G.711 A-law and µ-law (IP cameras, SIP gateways, some hardware encoders).
    case g711ALaw = "pcma"
    case g711MuLaw = "pcmu"
    /// Over Enhanced RTMP (FourCC `Opus`), with an OpusHead sequence start.
    case opus

    /// Enhanced RTMP audio FourCC.
    public init?(fourCC: UInt32) {
        switch fourCC {
        case 0x6D70_3461: self = .aac  // 'mp4a'
        case 0x2E6D_7033: self = .mp3  // '.mp3'
        case 0x4F70_7573: self = .opus  // 'Opus'
        default: return nil
        }
    }
}

public struct FLVTagError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Reason: Equatable, Sendable {
        case empty
        case truncated
        case unsupportedVideoCodec(UInt8)
        case unsupportedVideoFourCC(String)
        case unsupportedAudioFormat(UInt8)
        case unsupportedAudioFourCC(String)
        case unsupportedPacketType(UInt8)
    }
    public let reason: Reason
    public init(reason: Reason) { self.reason = reason }
    public var description: String {
        switch reason {
        case .empty: "empty media tag"
        case .truncated: "truncated media tag"
        case .unsupportedVideoCodec(let id): "unsupported FLV video codec id \(id) (H.264, and HEVC or AV1 over Enhanced RTMP, are supported)"
        case .unsupportedVideoFourCC(let fourCC): "unsupported Enhanced RTMP video codec '\(fourCC)' (avc1, hvc1 and av01 are supported)"
        case .unsupportedAudioFormat(let id): "unsupported FLV sound format \(id) (AAC, MP3 and G.711 are supported)"
        case .unsupportedAudioFourCC(let fourCC): "unsupported Enhanced RTMP audio codec '\(fourCC)' (mp4a, .mp3 and Opus are supported)"
        case .unsupportedPacketType(let t): "unsupported packet type \(t)"
        }
    }
}

/// Parses FLV tag bodies as carried in RTMP audio (8) and video (9) messages: classic FLV
/// (FLV specification 10.1, annex E.4.3) and Enhanced RTMP's extended video header (v1 and v2).
public enum FLVTag {
    public static func parseVideo(_ body: [UInt8]) throws -> FLVMediaEvent? {
        var r = ByteReader(body)
        do {
            guard !body.isEmpty else { throw FLVTagError(reason: .empty) }
            let head = try r.u8()
            if head & 0x80 != 0 { return try parseExtendedVideo(head, &r) }
            let frameType = head >> 4
            let codecID = head & 0x0F
            if frameType == 5 { return nil }  // video info/command frame
            // 7 is AVC; 12 is the pre-Enhanced-RTMP HEVC convention (Larix, nginx-rtmp forks).
            let codec: VideoCodec
            switch codecID {
            case 7: codec = .h264
            case 12: codec = .hevc
            default: throw FLVTagError(reason: .unsupportedVideoCodec(codecID))
            }
            let packetType = try r.u8()
            let cts = try r.i24()
            switch packetType {
            case 0: return .videoConfiguration(codec: codec, record: r.readRest())
            case 1: return .videoFrame(codec: codec, keyframe: frameType == 1, compositionTimeOffset: cts, data: r.readRest())
            case 2: return .videoEndOfSequence
            default: throw FLVTagError(reason: .unsupportedPacketType(packetType))
            }
        } catch is ByteReaderError {
            throw FLVTagError(reason: .truncated)
        }
    }

    /// Enhanced RTMP: `[1 isEx][3 frameType][4 packetType][FourCC]…`.
    private static func parseExtendedVideo(_ head: UInt8, _ r: inout ByteReader) throws -> FLVMediaEvent? {
        let frameType = (head >> 4) & 0x07
        let packetType = head & 0x0F
        let fourCC = try r.u32()
        if packetType == 4 { return nil }  // Metadata (colour info): nothing to forward
        if frameType == 5 { return nil }  // command frame
        guard let codec = VideoCodec(fourCC: fourCC) else {
            let text = String(decoding: [UInt8(fourCC >> 24), UInt8(fourCC >> 16 & 0xFF), UInt8(fourCC >> 8 & 0xFF), UInt8(fourCC & 0xFF)], as: UTF8.self)
            throw FLVTagError(reason: .unsupportedVideoFourCC(text))
        }
        switch packetType {
        case 0:  // SequenceStart
            return .videoConfiguration(codec: codec, record: r.readRest())
        case 1:  // CodedFrames: AVC and HEVC carry a composition time offset
            let cts: Int32 = codec == .av1 ? 0 : try r.i24()
            return .videoFrame(codec: codec, keyframe: frameType == 1, compositionTimeOffset: cts, data: r.readRest())
        case 3:  // CodedFramesX: composition time offset is zero and absent
            return .videoFrame(codec: codec, keyframe: frameType == 1, compositionTimeOffset: 0, data: r.readRest())
        case 2:
            return .videoEndOfSequence
        case 5:  // MPEG2TSSequenceStart (AV1 descriptor): the av1C from SequenceStart is what we use
            return nil
        default:  // Multitrack (6), ModEx (7), reserved
            throw FLVTagError(reason: .unsupportedPacketType(packetType))
        }
    }

    public static func parseAudio(_ body: [UInt8]) throws -> FLVMediaEvent {
        var r = ByteReader(body)
        do {
            guard !body.isEmpty else { throw FLVTagError(reason: .empty) }
            let head = try r.u8()
            let format = head >> 4
            let channels = head & 0x01 == 1 ? 2 : 1
            switch format {
            case 2, 14:  // MP3; 14 is "MP3 8 kHz"
                let data = r.readRest()
                guard !data.isEmpty else { throw FLVTagError(reason: .truncated) }
                // The FLV rate bits stop at 44.1 kHz; the MPEG frame header has the real rate.
                let header = MPEGAudioHeader(data)
                let rate = header?.sampleRate ?? (format == 14 ? 8000 : [5512, 11025, 22050, 44100][Int(head >> 2 & 0x03)])
                return .codedAudioFrame(codec: .mp3, sampleRate: rate, channels: header?.channels ?? channels, data: data)
            case 7, 8:  // G.711 A-law, µ-law: always 8 kHz
                let data = r.readRest()
                guard !data.isEmpty else { throw FLVTagError(reason: .truncated) }
                return .codedAudioFrame(codec: format == 7 ? .g711ALaw : .g711MuLaw, sampleRate: 8000, channels: channels, data: data)
            case 9:
                return try enhancedAudio(packetType: head & 0x0F, &r)
            case 10:
                break
            default:
                throw FLVTagError(reason: .unsupportedAudioFormat(format))
            }
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

    /// Enhanced RTMP v2 audio (sound format 9, ExHeader): the packet type in the low nibble, then
    /// the codec's FourCC. Sequence start carries the codec's configuration (AudioSpecificConfig,
    /// OpusHead); coded frames carry one frame.
    private static func enhancedAudio(packetType: UInt8, _ r: inout ByteReader) throws -> FLVMediaEvent {
        let fourCC = try r.u32()
        guard let codec = AudioCodec(fourCC: fourCC) else {
            throw FLVTagError(reason: .unsupportedAudioFourCC(String(decoding: fourCC.bigEndianBytes, as: UTF8.self)))
        }
        let body = r.readRest()
        switch (packetType, codec) {
        case (0, _):
            return .audioConfiguration(codec: codec, config: body)
        case (1, .mp3):
            guard let header = MPEGAudioHeader(body) else { throw FLVTagError(reason: .truncated) }
            return .codedAudioFrame(codec: .mp3, sampleRate: header.sampleRate, channels: header.channels, data: body)
        case (1, _):
            return .audioFrame(codec: codec, data: body)
        default:
            throw FLVTagError(reason: .unsupportedPacketType(packetType))
        }
    }
}
