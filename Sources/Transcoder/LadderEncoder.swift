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
    /// Source units held likewise (from the latest keyframe).
    static let maximumHeldSource = 256
    /// Video silent this long while audio flows (the app went to the background): slate.
    static let slateAfter: Int64 = videoTimescale
    /// Slate frames per second: enough to keep players' buffers moving, cheap to encode.
    static let slateInterval: Int64 = videoTimescale / 5
    /// How much the last frame is darkened to make the slate.
    static let slateDimming = 0.35

    private struct Rendition {
        let plan: PlannedRendition
        let trackID: UInt8
        let rung: RungEncoder
        let config: TrackConfig
        var encoder: H264Encoder { rung.encoder }
    }

    private let ladder: RenditionLadder
    private let settings: TranscoderSettings
    private var decoder: VideoDecoder?
    private var decoderConfig: [UInt8] = []
    private var renditions: [Rendition] = []
    private var source: StreamAnnounce?
    private var audioIn: TrackConfig?
    private var audioRetimer: AudioRetimer?
    /// For audio that is not AAC: the transcoder to AAC, and where its sample count starts on the
    /// stream timeline (in samples).
    private var audioTranscoder: AudioToAACTranscoder?
    private var audioBase: Int64?
    private var heldAudio: [AccessUnit] = []
    /// The publisher's video units that came before the source rendition was announced: the
    /// decoder gives its first frame (which plans the ladder and announces the source) only
    /// after its reorder delay, two or three units into a stream with B-frames, and the first of
    /// them is the keyframe the source rendition must start with.
    private var heldSource: [AccessUnit] = []
    private var cadence: KeyframeCadence
    private var thumbnails: ThumbnailSchedule
    private var thumbnailScaler: FrameScaler?
    private var jpegEncoder: JPEGEncoder?
    /// The stories feed's placeholder: the same picture at 16x9 (9x16 upright).
    private var placeholderScaler: FrameScaler?
    private var placeholderEncoder: JPEGEncoder?
    /// The last decoded source frame, the slate made from it, and the last video time encoded.
    private var lastFrame: VideoFrame?
    private var slate: VideoFrame?
    /// The operator's slate picture, decoded once (nil: none, or it does not decode).
    private lazy var slatePicture: VideoFrame? = settings.slateImage.flatMap(Self.decodeImage)
    private var lastVideoPts: Int64?
    private(set) var slateFramesEncoded = 0
    private(set) var thumbnailsTaken = 0
    private(set) var thumbnailErrors = 0
    private var sequence: UInt64 = 0
    private var announced: StreamAnnounce?
    private var pendingDiscontinuity = false
    private var waitingForKeyframe = true
    private(set) var framesEncoded = 0
    private(set) var decodeErrors = 0

    /// - Parameter replayUntil: ingest time (ms) up to which the input replays a GOP snapshot
    ///   after a takeover (``Assignment/replayUntil``).
    init(ladder: RenditionLadder, settings: TranscoderSettings, replayUntil: Int64? = nil) {
        self.ladder = ladder
        self.settings = settings
        self.cadence = KeyframeCadence(gopDuration: settings.gopSeconds, timescale: Self.videoTimescale, fastStart: settings.fastStart)
        self.thumbnails = ThumbnailSchedule(interval: settings.thumbnailInterval, timescale: Self.videoTimescale)
        cadence.replayUntil = replayUntil.map { min(max($0, -(1 << 40)), 1 << 40) * Self.videoTimescale / 1000 }
    }

    func handle(_ message: WireMessage) throws -> [WireMessage] {
        switch message {
        case .streamAnnounce(let a): return try configure(a)
        case .accessUnit(let u): return try unit(u)
        case .streamEnd(let e): return try flush(streamID: e.streamID) + [.streamEnd(e)]
        // Handed over to another worker: emit what the encoders hold, but the stream goes on.
        case .release(let id): return try flush(streamID: id)
        default: return []
        }
    }

    private var hasVideo: Bool { source?.tracks.contains { $0.kind == .video } ?? false }
    /// After the video rungs; fixed when the ladder is planned.
    private var audioOutTrackID: UInt8 = 1
    /// The publisher's H.264 as the "source" rendition (`settings.sourceRung`), after audio.
    private var sourcePassthrough: TrackConfig?
    private var sourceTrackID: UInt8 { audioOutTrackID + 1 }
    /// Whether the last announce carried the source rendition (units pass through only then).
    private var sourceAnnounced = false
    /// Encode one decoded frame in this many in every rung (keyframes always): the real-time
    /// policy thins the frame rate of a stream the worker cannot carry in full.
    var frameStep = 1
    private var decodedFrames = 0
    private(set) var framesThinned = 0
    /// Audio time (ms) of the last repeated announce of an audio-only stream.
    private var lastAudioRepeat: Int64?

    private func configure(_ announce: StreamAnnounce) throws -> [WireMessage] {
        source = announce
        if announce.discontinuity {
            // Reconnect or takeover: the timeline jumps. Restart decoding at the next keyframe
            // and make the next output frame an IDR in every rendition.
            waitingForKeyframe = true
            cadence.reset()
            pendingDiscontinuity = true
            heldSource = []
        }
        if let video = announce.tracks.first(where: { $0.kind == .video }), video.config != decoderConfig {
            guard let codec = VideoCodecID(rawValue: video.codec) else {
                throw TranscoderError.unsupportedCodec(video.codec)
            }
            // New or changed sequence header: re-open the decoder; output sizes stay. Source
            // units held under the old configuration go (they cannot follow the new one).
            heldSource = []
            decoder = try VideoDecoder(codec: codec, configuration: video.config)
            decoderConfig = video.config
            waitingForKeyframe = true
            // The source rung is the publisher's own H.264 or HEVC (`hvc1` in the packager; players
            // that cannot decode HEVC skip it by its CODECS); AV1 is transcoded only.
            sourcePassthrough = settings.sourceRung && (codec == .h264 || codec == .hevc)
                && Int(min(video.width, video.height)) <= settings.ladderCeiling ?? .max
                ? TrackConfig(trackID: 0, kind: .video, codec: video.codec, name: TrackConfig.sourceName, timescale: UInt32(Self.videoTimescale),
                              width: video.width, height: video.height, bitrate: video.bitrate, config: video.config)
                : nil
        }
        if let audio = announce.tracks.first(where: { $0.kind == .audio }), audio != audioIn || announce.discontinuity {
            audioIn = audio
            audioRetimer = AudioRetimer(sampleRate: Int(audio.sampleRate))
            audioBase = nil
            // MP3, G.711 and Opus become AAC at the same rate; AAC itself passes through.
            audioTranscoder = audio.codec == "aac" ? nil : try AudioToAACTranscoder(
                codec: audio.codec, sampleRate: Int(audio.sampleRate), channels: Int(max(1, audio.channels)), configuration: audio.config)
        }
        // Audio-only streams are announced now; with video, once the ladder exists.
        return hasVideo && renditions.isEmpty ? [] : announceOutput()
    }

    private func announceOutput() -> [WireMessage] {
        guard let source else { return [] }
        var tracks = renditions.map(\.config)
        if var passthrough = sourcePassthrough, !renditions.isEmpty {
            passthrough.trackID = sourceTrackID
            tracks.append(passthrough)
        }
        if let t = audioTranscoder {
            tracks.append(TrackConfig(trackID: audioOutTrackID, kind: .audio, codec: "aac", name: "audio", timescale: UInt32(t.sampleRate),
                                      bitrate: UInt32(t.bitrate),
                                      sampleRate: UInt32(t.sampleRate), channels: UInt8(t.channels), config: t.audioSpecificConfig))
        } else if let audioIn {
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
        sourceAnnounced = tracks.contains { $0.trackID == sourceTrackID }
        return [.streamAnnounce(next)]
    }

    private func planLadder(width: Int, height: Int) throws {
        if settings.thumbnailInterval > 0 {
            let size = ThumbnailSchedule.size(sourceWidth: width, sourceHeight: height)
            thumbnailScaler = FrameScaler(width: size.width, height: size.height, fullRange: true)
            jpegEncoder = try JPEGEncoder(width: size.width, height: size.height)
            let tiny = ThumbnailSchedule.placeholderSize(sourceWidth: width, sourceHeight: height)
            placeholderScaler = FrameScaler(width: tiny.width, height: tiny.height, fullRange: true)
            placeholderEncoder = try? JPEGEncoder(width: tiny.width, height: tiny.height, quality: ThumbnailSchedule.placeholderQuality)
        }
        let plans = ladder.plan(sourceWidth: width, sourceHeight: height, ceiling: settings.ladderCeiling)
        audioOutTrackID = UInt8(plans.count + 1)
        for (index, plan) in plans.enumerated() {
            let threads = settings.encoderThreads(rung: index, of: plans.count)
            let encoder = try H264Encoder(.init(width: plan.width, height: plan.height, bitrate: plan.bitrate, frameRate: settings.frameRate, timescale: Int32(Self.videoTimescale), preset: settings.preset, tune: settings.lowLatency ? "zerolatency" : nil, threads: threads))
            let sets = NALUnit.splitAnnexB(encoder.parameterSets)
            let record = try AVCDecoderConfigurationRecord(
                sequenceParameterSets: sets.filter { NALUnit.type($0) == NALUnit.sps },
                pictureParameterSets: sets.filter { NALUnit.type($0) == NALUnit.pps })
            let trackID = UInt8(index + 1)
            renditions.append(Rendition(
                plan: plan, trackID: trackID, rung: RungEncoder(scaler: FrameScaler(width: plan.width, height: plan.height), encoder: encoder, name: plan.name),
                config: TrackConfig(trackID: trackID, kind: .video, codec: "h264", name: plan.name, timescale: UInt32(Self.videoTimescale),
                                    width: UInt16(plan.width), height: UInt16(plan.height), bitrate: UInt32(plan.bitrate), config: record.serialized())))
        }
        for (larger, smaller) in zip(renditions, renditions.dropFirst()) {
            larger.rung.next = smaller.rung
            larger.rung.forwardSource = settings.scaleFrom == .source
        }
    }

    private func unit(_ u: AccessUnit) throws -> [WireMessage] {
        guard let source else { return [] }
        if u.trackID == audioIn?.trackID {
            guard announced != nil else {
                if heldAudio.count < Self.maximumHeldAudio { heldAudio.append(u) }
                return []
            }
            // Audio is the clock while video is missing: slate up to this audio frame's time.
            // An audio-only show repeats its announce every GOP of audio instead of at keyframes.
            var out = try slateFrames(until: u.dts * Self.videoTimescale / 1000, streamID: u.streamID)
            if !hasVideo {
                if let last = lastAudioRepeat, u.dts - last >= Int64(settings.gopSeconds * 1000) || u.dts < last {
                    out += repeatedAnnounce()
                    lastAudioRepeat = u.dts
                } else if lastAudioRepeat == nil {
                    lastAudioRepeat = u.dts
                }
            }
            return try out + audioUnits(u)
        }
        guard let decoder, source.tracks.contains(where: { $0.trackID == u.trackID && $0.kind == .video }) else { return [] }
        if waitingForKeyframe {
            guard u.isKeyframe else { return passthrough(u) }
            waitingForKeyframe = false
        }
        let frames: [VideoFrame]
        do {
            frames = try decoder.decode(u.data, pts: u.pts, dts: u.dts)
        } catch {
            decodeErrors += 1
            return passthrough(u)
        }
        // After the ladder's output: the first frame is what announces the ladder and the source.
        var out = try encodeDecoded(frames, streamID: u.streamID) + passthrough(u)
        if !out.isEmpty, pendingDiscontinuity { out.insert(contentsOf: announceOutput(), at: 0) }
        return out
    }

    /// Decoded source frames through the ladder (planned from the first one).
    private func encodeDecoded(_ frames: [VideoFrame], streamID: Int64) throws -> [WireMessage] {
        var out: [WireMessage] = []
        for frame in frames {
            if renditions.isEmpty {
                try planLadder(width: frame.width, height: frame.height)
                out += announceOutput()
                out += try heldAudio.flatMap(audioUnits)
                heldAudio = []
                let held = heldSource
                heldSource = []
                out += held.flatMap(passthrough)
            }
            let pts = frame.pts * Self.videoTimescale / 1000
            frame.pts = pts
            // Encoders need increasing time: a late frame behind the slate is dropped.
            if let last = lastVideoPts, pts <= last { continue }
            if slate != nil { slate = nil }  // real video is back (at a keyframe)
            lastFrame = frame
            lastVideoPts = pts
            let keyframe = cadence.isKeyframe(pts: pts)
            if thumbnails.isDue(pts: pts), let still = thumbnail(of: frame, streamID: streamID) { out.append(still) }
            decodedFrames += 1
            if !keyframe, frameStep > 1, decodedFrames % frameStep != 0 {
                framesThinned += 1
                continue
            }
            if keyframe, framesEncoded > 0 { out += repeatedAnnounce() }
            out += try encodeLadder(frame, keyframe: keyframe, streamID: streamID)
            framesEncoded += 1
        }
        return out
    }

    /// Slate frames from the last video time up to `time` (90 kHz) once video has been missing
    /// for ``slateAfter``: the last frame, dimmed, at 5 fps, on the same keyframe cadence.
    /// Decoding then waits for the publisher's next keyframe, so video resumes cleanly.
    private func slateFrames(until time: Int64, streamID: Int64) throws -> [WireMessage] {
        guard let last = lastVideoPts, let lastFrame, let top = renditions.first, time - last > Self.slateAfter else { return [] }
        if slate == nil {
            // The operator's slate picture when it decodes, else the last frame, dimmed.
            let still = try FrameScaler(width: top.plan.width, height: top.plan.height).scale(slatePicture ?? lastFrame)
            if slatePicture == nil { still.dim(by: Self.slateDimming) }
            slate = still
            waitingForKeyframe = true
        }
        guard let slate else { return [] }
        var out: [WireMessage] = []
        var next = last + Self.slateInterval
        while next <= time {
            slate.pts = next
            let keyframe = cadence.isKeyframe(pts: next)
            if keyframe { out += repeatedAnnounce() }
            out += try encodeLadder(slate, keyframe: keyframe, streamID: streamID)
            slateFramesEncoded += 1
            lastVideoPts = next
            next += Self.slateInterval
        }
        return out
    }

    /// The last announce again, before a keyframe (or, audio-only, every GOP of audio): a
    /// packager that restarted (and lost what it knew) picks the stream up here, as a late
    /// joiner from a snapshot. A repeat is never a cut (the announce it repeats may have been
    /// one), and none is due while a cut waits to be announced.
    private func repeatedAnnounce() -> [WireMessage] {
        guard !pendingDiscontinuity, var repeated = announced else { return [] }
        repeated.discontinuity = false
        return [.streamAnnounce(repeated)]
    }

    /// The publisher's own unit as the source rendition, once that is announced.
    private func passthrough(_ u: AccessUnit) -> [WireMessage] {
        guard sourceAnnounced else {
            // From the latest keyframe on (the source rendition starts with one); a stream that
            // does not decode for that long keeps nothing.
            guard sourcePassthrough != nil, renditions.isEmpty else { return [] }
            if u.isKeyframe {
                heldSource = [u]
            } else if !heldSource.isEmpty {
                if heldSource.count < Self.maximumHeldSource { heldSource.append(u) } else { heldSource = [] }
            }
            return []
        }
        sequence += 1
        let scale = Self.videoTimescale / 1000
        return [.accessUnit(AccessUnit(streamID: u.streamID, trackID: sourceTrackID, flags: u.flags, sequence: sequence,
                                       dts: u.dts * scale, compositionOffset: u.compositionOffset * Int32(scale), data: u.data))]
    }

    /// Every rung scales (from the source or the nearest larger rung, `settings.scaleFrom`) and
    /// encodes `frame`, each on its own thread when there are several (see ``RungEncoder``); the
    /// packets come back in rung order.
    private func encodeLadder(_ frame: VideoFrame, keyframe: Bool, streamID: Int64) throws -> [WireMessage] {
        var packets: [[EncodedPacket]] = []
        guard !renditions.isEmpty else { return [] }  // an empty ladder (no rung fits) encodes nothing
        if renditions.count == 1 {
            packets = [try renditions[0].rung.encodeHere(frame, keyframe: keyframe)]
        } else {
            renditions[0].rung.submit(frame, keyframe: keyframe)  // the chain reaches every rung
            // Wait for every rung (even after a failure) so none still reads the frame.
            let results = renditions.map { r in Result { try r.rung.finish() } }
            packets = try results.map { try $0.get() }
        }
        var out: [WireMessage] = []
        for (r, list) in zip(renditions, packets) {
            for packet in list { out.append(wrap(packet, rendition: r, streamID: streamID)) }
        }
        return out
    }

    deinit {
        for r in renditions { r.rung.stop() }
    }

    static func decodeImage(_ jpeg: [UInt8]) -> VideoFrame? {
        guard let decoder = try? VideoDecoder(codec: .mjpeg, configuration: []) else { return nil }
        let frames = ((try? decoder.decode(jpeg, pts: 0, dts: 0)) ?? []) + ((try? decoder.flush()) ?? [])
        return frames.first
    }

    /// A preview still; a failure costs the still, never the video.
    private func thumbnail(of frame: VideoFrame, streamID: Int64) -> WireMessage? {
        guard let thumbnailScaler, let jpegEncoder else { return nil }
        do {
            let jpeg = try jpegEncoder.encode(try thumbnailScaler.scale(frame))
            thumbnailsTaken += 1
            // The placeholder is best effort: without it the still still goes.
            var placeholder: [UInt8] = []
            if let placeholderScaler, let placeholderEncoder, let tiny = try? placeholderEncoder.encode(try placeholderScaler.scale(frame)),
               tiny.count <= Thumbnail.maximumPlaceholder {
                placeholder = tiny
            }
            return .thumbnail(Thumbnail(streamID: streamID, pts: frame.pts, width: UInt16(jpegEncoder.width), height: UInt16(jpegEncoder.height), jpeg: jpeg,
                                        placeholder: placeholder))
        } catch {
            thumbnailErrors += 1
            return nil
        }
    }

    /// AAC passes through, re-timed onto exact frame steps; anything else is transcoded to AAC.
    private func audioUnits(_ u: AccessUnit) throws -> [WireMessage] {
        guard let transcoder = audioTranscoder else {
            let dts = audioRetimer?.retime(milliseconds: u.dts) ?? u.dts
            sequence += 1
            return [.accessUnit(AccessUnit(streamID: u.streamID, trackID: audioOutTrackID, flags: AccessUnit.keyframeFlag, sequence: sequence, dts: dts, compositionOffset: 0, data: u.data))]
        }
        let rate = Int64(transcoder.sampleRate)
        let arriving = u.dts * rate / 1000
        let base = audioBase ?? arriving
        // A pause in the publisher's audio: move the sample clock on, so audio stays with video.
        let expected = base + transcoder.samplesDecoded
        audioBase = arriving - expected > rate / 2 ? base + (arriving - expected) : base
        var out: [WireMessage] = []
        for packet in try transcoder.transcode(u.data) {
            sequence += 1
            out.append(.accessUnit(AccessUnit(streamID: u.streamID, trackID: audioOutTrackID, flags: AccessUnit.keyframeFlag, sequence: sequence,
                                              dts: (audioBase ?? 0) + packet.dts, compositionOffset: 0, data: packet.data)))
        }
        return out
    }

    /// End of this worker's part of the stream (end, or hand-over): the frames the decoder still
    /// holds (reordering delay) go through the ladder, then the encoders give up theirs.
    private func flush(streamID: Int64) throws -> [WireMessage] {
        var out = try encodeDecoded((try? decoder?.flush()) ?? [], streamID: streamID)
        for r in renditions {
            for packet in try r.encoder.flush() { out.append(wrap(packet, rendition: r, streamID: streamID)) }
        }
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
