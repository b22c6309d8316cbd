import MediaFormats
import RTMP
import StorecastWire

/// Turns one publisher's RTMP audio/video messages into wire messages: track configurations
/// from the sequence headers, then access units on the normalised timeline. Pure.
public struct StreamAssembler: Sendable {
    public static let videoTrack: UInt8 = 1
    public static let audioTrack: UInt8 = 2

    public struct Identity: Sendable, Equatable {
        public var streamID: Int64
        public var sessionID: Int64
        public var tenant: String
        public var streamName: String
        public init(streamID: Int64, sessionID: Int64, tenant: String, streamName: String) {
            self.streamID = streamID
            self.sessionID = sessionID
            self.tenant = tenant
            self.streamName = streamName
        }
    }

    public enum Event: Sendable, Equatable {
        case message(WireMessage)
        /// A tag that could not be used (corrupt header, frame before its configuration): log and count it.
        case rejectedTag(String)
        /// A codec Storecast does not take: the publish is refused with this reason.
        case unsupported(String)
        case timestampCorrected(TimestampNormalizer.Correction)
    }

    public let identity: Identity
    private var video: TrackConfig? { didSet { if video != oldValue { needsAnnounce = true } } }
    private var audio: TrackConfig? { didSet { if audio != oldValue { needsAnnounce = true } } }
    /// A track appeared or changed since the last announce.
    private var needsAnnounce = false
    private var timestamps = TimestampNormalizer()
    private var sequence: UInt64 = 0
    /// Added to every normalised timestamp: non-zero when this publish continues a session.
    private let origin: Int64
    private var pendingDiscontinuity: Bool
    private var lastDts: Int64?

    /// - Parameters:
    ///   - continuing: where the session's timeline stood when the previous connection dropped;
    ///     this connection's timestamps (which restart at 0) continue after it, `gap` later.
    public init(identity: Identity, continuing: StreamTimeline? = nil, gap: Duration = .zero) {
        self.identity = identity
        if let continuing {
            let gapMs = gap.components.seconds * 1000 + gap.components.attoseconds / 1_000_000_000_000_000
            origin = continuing.lastDts + max(1, gapMs)
            sequence = continuing.lastSequence
        } else {
            origin = 0
        }
        pendingDiscontinuity = continuing != nil
    }

    /// Where this publish's timeline stands (for a later reconnect).
    public var timeline: StreamTimeline? {
        lastDts.map { StreamTimeline(lastDts: $0, lastSequence: sequence) }
    }

    public mutating func received(_ message: RTMPMessage) -> [Event] {
        switch message.type {
        case .video: return video(message)
        case .audio: return audio(message)
        default: return []
        }
    }

    static func isUnsupported(_ error: any Error) -> Bool {
        guard let e = error as? FLVTagError else { return false }
        switch e.reason {
        case .unsupportedVideoCodec, .unsupportedVideoFourCC, .unsupportedAudioFormat, .unsupportedAudioFourCC: return true
        default: return false
        }
    }

    /// Coded size from the codec configuration; AV1's is left to the decoder (0 x 0).
    static func videoSize(_ codec: VideoCodec, _ record: [UInt8]) throws -> (Int, Int) {
        switch codec {
        case .h264:
            let sps = try AVCDecoderConfigurationRecord(parsing: record).parsedSPS()
            return (sps.width, sps.height)
        case .hevc:
            let sps = try HEVCDecoderConfigurationRecord(parsing: record).parsedSPS()
            return (sps.width, sps.height)
        case .av1:
            guard record.count >= 4, record[0] & 0x80 != 0 else { throw FLVTagError(reason: .truncated) }
            return (0, 0)
        }
    }

    private mutating func video(_ message: RTMPMessage) -> [Event] {
        let event: FLVMediaEvent?
        do { event = try FLVTag.parseVideo(message.payload) } catch {
            return [Self.isUnsupported(error) ? .unsupported("\(error)") : .rejectedTag("\(error)")]
        }
        switch event {
        case .videoConfiguration(let codec, let record) where record.count > WireCodec.maximumConfig:
            return [.rejectedTag("\(codec) sequence header of \(record.count) bytes, over the \(WireCodec.maximumConfig)-byte limit")]
        case .videoConfiguration(let codec, let record):
            do {
                let (width, height) = try Self.videoSize(codec, record)
                video = TrackConfig(trackID: Self.videoTrack, kind: .video, codec: codec.rawValue, name: TrackConfig.sourceName, timescale: 1000,
                                    width: UInt16(width), height: UInt16(height), config: record)
                return []
            } catch {
                return [.rejectedTag("\(codec) sequence header: \(error)")]
            }
        case .videoFrame(_, let keyframe, let cts, let data):
            guard video != nil else { return [.rejectedTag("video frame before its sequence header")] }
            return unit(track: Self.videoTrack, timestamp: message.timestamp, keyframe: keyframe, cts: cts, data: data)
        default:
            return []
        }
    }

    private mutating func audio(_ message: RTMPMessage) -> [Event] {
        let event: FLVMediaEvent
        do { event = try FLVTag.parseAudio(message.payload) } catch {
            return [Self.isUnsupported(error) ? .unsupported("\(error)") : .rejectedTag("\(error)")]
        }
        switch event {
        case .audioConfiguration(let codec, let config) where config.count > WireCodec.maximumConfig:
            return [.rejectedTag("\(codec) sequence header of \(config.count) bytes, over the \(WireCodec.maximumConfig)-byte limit")]
        case .audioConfiguration(.opus, let config):
            do {
                let head = try OpusHead(parsing: config)
                audio = TrackConfig(trackID: Self.audioTrack, kind: .audio, codec: AudioCodec.opus.rawValue, name: "audio", timescale: 1000,
                                    sampleRate: UInt32(OpusHead.decodingRate), channels: UInt8(clamping: head.channels), config: config)
                return []
            } catch {
                return [.rejectedTag("Opus sequence start: \(error)")]
            }
        case .audioConfiguration(.mp3, _), .audioConfiguration(.g711ALaw, _), .audioConfiguration(.g711MuLaw, _):
            return []  // these codecs need no configuration; their frames say it
        case .audioConfiguration(_, let config):
            do {
                let asc = try AudioSpecificConfig(parsing: config)
                audio = TrackConfig(trackID: Self.audioTrack, kind: .audio, codec: "aac", name: "audio", timescale: 1000,
                                    sampleRate: UInt32(asc.sampleRate), channels: UInt8(clamping: asc.channels), config: config)
                return []
            } catch {
                return [.rejectedTag("AAC sequence header: \(error)")]
            }
        case .audioFrame(_, let data):
            guard audio != nil else { return [.rejectedTag("audio frame before its sequence header")] }
            return unit(track: Self.audioTrack, timestamp: message.timestamp, keyframe: true, cts: 0, data: data)
        case .codedAudioFrame(let codec, let rate, let channels, let data):
            // No sequence header: the track is what the frames say (a change re-announces).
            audio = TrackConfig(trackID: Self.audioTrack, kind: .audio, codec: codec.rawValue, name: "audio", timescale: 1000,
                                sampleRate: UInt32(rate), channels: UInt8(clamping: channels), config: [])
            return unit(track: Self.audioTrack, timestamp: message.timestamp, keyframe: true, cts: 0, data: data)
        default:
            return []
        }
    }

    private mutating func unit(track: UInt8, timestamp: UInt32, keyframe: Bool, cts: Int32, data: [UInt8]) -> [Event] {
        var events: [Event] = []
        if needsAnnounce {
            // First frame, or a new sequence header (resolution change): re-announce. Consumers
            // apply a new configuration at the next keyframe.
            needsAnnounce = false
            let tracks = [video, audio].compactMap { $0 }
            events.append(.message(.streamAnnounce(StreamAnnounce(
                streamID: identity.streamID, sessionID: identity.sessionID, tenant: identity.tenant,
                streamName: identity.streamName, discontinuity: pendingDiscontinuity, tracks: tracks))))
            pendingDiscontinuity = false
        }
        let (relative, correction) = timestamps.normalize(timestamp, track: track)
        let dts = origin + relative
        lastDts = max(lastDts ?? dts, dts)
        if correction != .none { events.append(.timestampCorrected(correction)) }
        sequence += 1
        events.append(.message(.accessUnit(AccessUnit(
            streamID: identity.streamID, trackID: track, flags: keyframe ? AccessUnit.keyframeFlag : 0,
            sequence: sequence, dts: dts, compositionOffset: cts, data: data))))
        return events
    }
}
