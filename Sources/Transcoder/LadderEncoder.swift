import FFmpegCodecs
import MediaFormats
import StorecastWire

/// Decode once, scale and encode every rendition: the CPU-bound core of one stream, run on the
/// stream's own thread. Input is ingest's wire messages; output is the renditions' wire messages.
///
/// The ladder is planned from the first decoded frame (its real size, whatever the codec or the
/// sequence header claimed) and then kept: a later resolution change from the publisher is
/// scaled into the same renditions, so viewers never see a switch.
final class LadderEncoder {
    static let videoTimescale: Int64 = 90_000
    /// Audio held while the ladder waits for its first decoded frame.
    static let maximumHeldAudio = 256

    private struct Rendition {
        let plan: PlannedRendition
        let trackID: UInt8
        let scaler: FrameScaler
        let encoder: H264Encoder
        let config: TrackConfig
    }

    private let ladder: RenditionLadder
    private let settings: TranscoderSettings
    private var decoder: VideoDecoder?
    private var decoderConfig: [UInt8] = []
    private var renditions: [Rendition] = []
    private var source: StreamAnnounce?
    private var audioIn: TrackConfig?
    private var audioRetimer: AudioRetimer?
    private var heldAudio: [AccessUnit] = []
    private var cadence: KeyframeCadence
    private var sequence: UInt64 = 0
    private var announced: StreamAnnounce?
    private var pendingDiscontinuity = false
    private var waitingForKeyframe = true
    private(set) var framesEncoded = 0
    private(set) var decodeErrors = 0

    init(ladder: RenditionLadder, settings: TranscoderSettings) {
        self.ladder = ladder
        self.settings = settings
        self.cadence = KeyframeCadence(gopDuration: settings.gopSeconds, timescale: Self.videoTimescale)
    }

    func handle(_ message: WireMessage) throws -> [WireMessage] {
        switch message {
        case .streamAnnounce(let a): return try configure(a)
        case .accessUnit(let u): return try unit(u)
        case .streamEnd(let e): return try finish(e)
        default: return []
        }
    }

    private var hasVideo: Bool { source?.tracks.contains { $0.kind == .video } ?? false }
    private var audioOutTrackID: UInt8 { UInt8(renditions.count + 1) }

    private func configure(_ announce: StreamAnnounce) throws -> [WireMessage] {
        source = announce
        if announce.discontinuity {
            // Reconnect or takeover: the timeline jumps. Restart decoding at the next keyframe
            // and make the next output frame an IDR in every rendition.
            waitingForKeyframe = true
            cadence.reset()
            pendingDiscontinuity = true
        }
        if let video = announce.tracks.first(where: { $0.kind == .video }), video.config != decoderConfig {
            guard let codec = VideoCodecID(rawValue: video.codec) else {
                throw TranscoderError.unsupportedCodec(video.codec)
            }
            // New or changed sequence header: re-open the decoder; output sizes stay.
            decoder = try VideoDecoder(codec: codec, configuration: video.config)
            decoderConfig = video.config
            waitingForKeyframe = true
        }
        if let audio = announce.tracks.first(where: { $0.kind == .audio }), audio.config != audioIn?.config {
            audioIn = audio
            audioRetimer = AudioRetimer(sampleRate: Int(audio.sampleRate))
        }
        // Audio-only streams are announced now; with video, once the ladder exists.
        return hasVideo && renditions.isEmpty ? [] : announceOutput()
    }

    private func announceOutput() -> [WireMessage] {
        guard let source else { return [] }
        var tracks = renditions.map(\.config)
        if let audioIn {
            var out = audioIn
            out.trackID = audioOutTrackID
            out.timescale = audioIn.sampleRate
            out.bitrate = out.bitrate == 0 ? 128_000 : out.bitrate
            tracks.append(out)
        }
        let next = StreamAnnounce(streamID: source.streamID, sessionID: source.sessionID, tenant: source.tenant, streamName: source.streamName, discontinuity: pendingDiscontinuity, tracks: tracks)
        guard next != announced || pendingDiscontinuity else { return [] }
        pendingDiscontinuity = false
        announced = next
        return [.streamAnnounce(next)]
    }

    private func planLadder(width: Int, height: Int) throws {
        for (index, plan) in ladder.plan(sourceWidth: width, sourceHeight: height).enumerated() {
            let encoder = try H264Encoder(.init(width: plan.width, height: plan.height, bitrate: plan.bitrate, frameRate: settings.frameRate, timescale: Int32(Self.videoTimescale), preset: settings.preset, tune: "zerolatency", threads: settings.encoderThreads))
            let sets = NALUnit.splitAnnexB(encoder.parameterSets)
            let record = try AVCDecoderConfigurationRecord(
                sequenceParameterSets: sets.filter { NALUnit.type($0) == NALUnit.sps },
                pictureParameterSets: sets.filter { NALUnit.type($0) == NALUnit.pps })
            let trackID = UInt8(index + 1)
            renditions.append(Rendition(
                plan: plan, trackID: trackID, scaler: FrameScaler(width: plan.width, height: plan.height), encoder: encoder,
                config: TrackConfig(trackID: trackID, kind: .video, codec: "h264", name: plan.name, timescale: UInt32(Self.videoTimescale),
                                    width: UInt16(plan.width), height: UInt16(plan.height), bitrate: UInt32(plan.bitrate), config: record.serialized())))
        }
    }

    private func unit(_ u: AccessUnit) throws -> [WireMessage] {
        guard let source else { return [] }
        if u.trackID == audioIn?.trackID {
            guard announced != nil else {
                if heldAudio.count < Self.maximumHeldAudio { heldAudio.append(u) }
                return []
            }
            return [audioUnit(u)]
        }
        guard let decoder, source.tracks.contains(where: { $0.trackID == u.trackID && $0.kind == .video }) else { return [] }
        if waitingForKeyframe {
            guard u.isKeyframe else { return [] }
            waitingForKeyframe = false
        }
        let frames: [VideoFrame]
        do {
            frames = try decoder.decode(u.data, pts: u.pts, dts: u.dts)
        } catch {
            decodeErrors += 1
            return []
        }
        var out: [WireMessage] = []
        for frame in frames {
            if renditions.isEmpty {
                try planLadder(width: frame.width, height: frame.height)
                out += announceOutput()
                out += heldAudio.map(audioUnit)
                heldAudio = []
            }
            let pts = frame.pts * Self.videoTimescale / 1000
            frame.pts = pts
            let keyframe = cadence.isKeyframe(pts: pts)
            for r in renditions {
                let scaled = try r.scaler.scale(frame)
                for packet in try r.encoder.encode(scaled, forceKeyframe: keyframe) {
                    out.append(wrap(packet, rendition: r, streamID: u.streamID))
                }
            }
            framesEncoded += 1
        }
        if !out.isEmpty, pendingDiscontinuity { out.insert(contentsOf: announceOutput(), at: 0) }
        return out
    }

    private func audioUnit(_ u: AccessUnit) -> WireMessage {
        let dts = audioRetimer?.retime(milliseconds: u.dts) ?? u.dts
        sequence += 1
        return .accessUnit(AccessUnit(streamID: u.streamID, trackID: audioOutTrackID, flags: AccessUnit.keyframeFlag, sequence: sequence, dts: dts, compositionOffset: 0, data: u.data))
    }

    private func finish(_ end: StreamEnd) throws -> [WireMessage] {
        var out: [WireMessage] = []
        for r in renditions {
            for packet in try r.encoder.flush() { out.append(wrap(packet, rendition: r, streamID: end.streamID)) }
        }
        out.append(.streamEnd(end))
        return out
    }

    private func wrap(_ packet: EncodedPacket, rendition r: Rendition, streamID: Int64) -> WireMessage {
        let nals = NALUnit.splitAnnexB(packet.data).filter {
            let t = NALUnit.type($0)
            return t != NALUnit.sps && t != NALUnit.pps && t != NALUnit.accessUnitDelimiter
        }
        sequence += 1
        return .accessUnit(AccessUnit(
            streamID: streamID, trackID: r.trackID, flags: packet.isKeyframe ? AccessUnit.keyframeFlag : 0, sequence: sequence,
            dts: packet.dts, compositionOffset: Int32(clamping: packet.pts - packet.dts), data: NALUnit.lengthPrefixed(nals)))
    }
}

enum TranscoderError: Error, CustomStringConvertible {
    case unsupportedCodec(String)
    var description: String {
        switch self {
        case .unsupportedCodec(let c): "no decoder for codec '\(c)'"
        }
    }
}
