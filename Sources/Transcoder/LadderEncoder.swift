import FFmpegCodecs
import MediaFormats
import StorecastWire

/// Decode once, scale and encode every rendition: the CPU-bound core of one stream, run on the
/// stream's own thread. Input is ingest's wire messages; output is the renditions' wire messages.
final class LadderEncoder {
    static let videoTimescale: Int64 = 90_000

    private struct Rendition {
        let plan: PlannedRendition
        let trackID: UInt8
        let scaler: FrameScaler
        let encoder: H264Encoder
        let config: TrackConfig
    }

    private let ladder: RenditionLadder
    private let settings: TranscoderSettings
    private var decoder: H264Decoder?
    private var decoderConfig: [UInt8] = []
    private var renditions: [Rendition] = []
    private var audioIn: TrackConfig?
    private var audioOutTrackID: UInt8 = 0
    private var audioRetimer: AudioRetimer?
    private var cadence: KeyframeCadence
    private var sequence: UInt64 = 0
    private var announce: StreamAnnounce?
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

    private func configure(_ source: StreamAnnounce) throws -> [WireMessage] {
        let video = source.tracks.first { $0.kind == .video }
        let audio = source.tracks.first { $0.kind == .audio }
        if source.discontinuity {
            // Reconnect or takeover: the timeline jumps. Restart decoding at the next keyframe
            // and make the next output frame an IDR in every rendition.
            waitingForKeyframe = true
            cadence.reset()
        }
        if let video, video.config != decoderConfig {
            // New or changed sequence header: re-open the decoder at the next keyframe; the output
            // renditions keep their sizes and timelines (the scalers follow the new input size).
            decoder = try H264Decoder(avcC: video.config)
            decoderConfig = video.config
            waitingForKeyframe = true
        }
        if renditions.isEmpty, let video {
            let plans = ladder.plan(sourceWidth: Int(video.width), sourceHeight: Int(video.height))
            for (index, plan) in plans.enumerated() {
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
        if let audio, audio.config != audioIn?.config {
            audioIn = audio
            audioRetimer = AudioRetimer(sampleRate: Int(audio.sampleRate))
        }
        audioOutTrackID = UInt8(renditions.count + 1)
        var tracks = renditions.map(\.config)
        if let audioIn {
            var out = audioIn
            out.trackID = audioOutTrackID
            out.timescale = audioIn.sampleRate
            out.bitrate = out.bitrate == 0 ? 128_000 : out.bitrate
            tracks.append(out)
        }
        let next = StreamAnnounce(streamID: source.streamID, sessionID: source.sessionID, tenant: source.tenant, streamName: source.streamName, discontinuity: source.discontinuity, tracks: tracks)
        guard next != announce || source.discontinuity else { return [] }
        announce = next
        return [.streamAnnounce(next)]
    }

    private func unit(_ u: AccessUnit) throws -> [WireMessage] {
        guard announce != nil else { return [] }
        if u.trackID == audioIn?.trackID, var retimer = audioRetimer {
            let dts = retimer.retime(milliseconds: u.dts)
            audioRetimer = retimer
            sequence += 1
            return [.accessUnit(AccessUnit(streamID: u.streamID, trackID: audioOutTrackID, flags: AccessUnit.keyframeFlag, sequence: sequence, dts: dts, compositionOffset: 0, data: u.data))]
        }
        guard let decoder, !renditions.isEmpty else { return [] }
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
        return out
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
