internal import CFFmpeg

/// Turns audio that is not AAC (MP3, G.711 A-law and µ-law, Opus) into AAC-LC: libavcodec decodes it,
/// the samples are regrouped into the encoder's 1024-sample frames, and libavcodec's native AAC
/// encoder encodes them at the same rate and channel count (no resampling). Owns both codec
/// contexts, the packet and the frames. Blocking: run it on the stream's thread.
public final class AudioToAACTranscoder {
    /// Codec names as ingest announces them.
    public static let inputCodecs = ["mp3", "pcma", "pcmu", "opus"]

    private let decoder: UnsafeMutablePointer<AVCodecContext>
    private let encoder: UnsafeMutablePointer<AVCodecContext>
    private let packet: UnsafeMutablePointer<AVPacket>
    private let decoded: UnsafeMutablePointer<AVFrame>
    /// Decoded samples per channel, waiting for a whole encoder frame.
    private var pending: [[Float]]
    private var samplesEncoded: Int64 = 0
    /// Samples decoded so far (encoded, or waiting for a whole frame).
    public private(set) var samplesDecoded: Int64 = 0
    public let sampleRate: Int
    public let channels: Int
    public let frameSize: Int
    /// The AAC bit rate: 128 kbit/s from 32 kHz up, 32 kbit/s per channel below (G.711's 8 kHz).
    public let bitrate: Int
    /// The AAC AudioSpecificConfig (for the announce's track config).
    public let audioSpecificConfig: [UInt8]

    /// - Parameter configuration: the codec's own header when it has one (OpusHead for Opus).
    public init(codec: String, sampleRate: Int, channels: Int, configuration: [UInt8] = []) throws {
        let bitrate = sampleRate >= 32_000 ? 128_000 : 32_000 * channels
        let id: AVCodecID
        switch codec {
        case "mp3": id = AV_CODEC_ID_MP3
        case "pcma": id = AV_CODEC_ID_PCM_ALAW
        case "pcmu": id = AV_CODEC_ID_PCM_MULAW
        case "opus": id = AV_CODEC_ID_OPUS
        default: throw FFmpegError("AudioToAACTranscoder", message: "no decoder for audio codec '\(codec)' (mp3, pcma, pcmu and opus are transcoded)")
        }
        guard let decoderCodec = avcodec_find_decoder(id), let encoderCodec = avcodec_find_encoder(AV_CODEC_ID_AAC) else {
            throw FFmpegError("avcodec_find_decoder", message: "libavcodec lacks the \(codec) decoder or the AAC encoder")
        }
        guard let dec = avcodec_alloc_context3(decoderCodec) else { throw FFmpegError("avcodec_alloc_context3", message: "out of memory") }
        var d: UnsafeMutablePointer<AVCodecContext>? = dec
        dec.pointee.sample_rate = Int32(sampleRate)
        av_channel_layout_default(&dec.pointee.ch_layout, Int32(channels))
        do { try setExtradata(configuration, on: dec) } catch {
            avcodec_free_context(&d)
            throw error
        }
        var rc = avcodec_open2(dec, decoderCodec, nil)
        guard rc >= 0 else {
            avcodec_free_context(&d)
            throw FFmpegError(code: rc, "avcodec_open2 (\(codec) decoder)")
        }
        guard let enc = avcodec_alloc_context3(encoderCodec) else {
            avcodec_free_context(&d)
            throw FFmpegError("avcodec_alloc_context3", message: "out of memory")
        }
        var e: UnsafeMutablePointer<AVCodecContext>? = enc
        enc.pointee.sample_fmt = AV_SAMPLE_FMT_FLTP
        enc.pointee.sample_rate = Int32(sampleRate)
        av_channel_layout_default(&enc.pointee.ch_layout, Int32(channels))
        enc.pointee.bit_rate = Int64(bitrate)
        enc.pointee.time_base = AVRational(num: 1, den: Int32(sampleRate))
        enc.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER
        rc = avcodec_open2(enc, encoderCodec, nil)
        guard rc >= 0, let pkt = av_packet_alloc(), let frame = av_frame_alloc() else {
            avcodec_free_context(&d)
            avcodec_free_context(&e)
            throw FFmpegError(code: rc < 0 ? rc : -12, "avcodec_open2 (AAC encoder, \(sampleRate) Hz, \(channels) channels)")
        }
        decoder = dec
        encoder = enc
        packet = pkt
        decoded = frame
        self.sampleRate = sampleRate
        self.channels = channels
        self.bitrate = bitrate
        frameSize = Int(enc.pointee.frame_size > 0 ? enc.pointee.frame_size : 1024)
        audioSpecificConfig = enc.pointee.extradata.map { Array(UnsafeBufferPointer(start: $0, count: Int(enc.pointee.extradata_size))) } ?? []
        pending = Array(repeating: [], count: channels)
    }

    deinit {
        var d: UnsafeMutablePointer<AVCodecContext>? = decoder
        avcodec_free_context(&d)
        var e: UnsafeMutablePointer<AVCodecContext>? = encoder
        avcodec_free_context(&e)
        var p: UnsafeMutablePointer<AVPacket>? = packet
        av_packet_free(&p)
        var f: UnsafeMutablePointer<AVFrame>? = decoded
        av_frame_free(&f)
    }

    /// Decodes one coded frame and returns the AAC frames that became ready, with pts and dts
    /// counted in samples from the first one.
    public func transcode(_ data: [UInt8]) throws -> [EncodedPacket] {
        guard !data.isEmpty else { return [] }
        try FFmpegError.check(av_new_packet(packet, Int32(data.count)), "av_new_packet")
        data.withUnsafeBufferPointer { packet.pointee.data.update(from: $0.baseAddress!, count: data.count) }
        let sent = avcodec_send_packet(decoder, packet)
        av_packet_unref(packet)
        if sent < 0 && sent != cffmpeg_averror_eagain() { throw FFmpegError(code: sent, "avcodec_send_packet (audio)") }
        while avcodec_receive_frame(decoder, decoded) >= 0 {
            appendSamples()
            av_frame_unref(decoded)
        }
        var out: [EncodedPacket] = []
        while pending[0].count >= frameSize { out += try encodeOneFrame() }
        return out
    }

    /// Copies the decoded frame's samples, whatever libavcodec's format, into `pending` as floats.
    private func appendSamples() {
        let f = decoded.pointee
        let count = Int(f.nb_samples)
        let inChannels = max(1, Int(f.ch_layout.nb_channels))
        guard count > 0, let planes = f.extended_data else { return }
        let format = AVSampleFormat(rawValue: f.format)
        let planar = av_sample_fmt_is_planar(format) != 0
        func sample(_ channel: Int, _ i: Int) -> Float {
            guard let plane = planes[planar ? channel : 0] else { return 0 }
            let index = planar ? i : i * inChannels + channel
            switch format {
            case AV_SAMPLE_FMT_FLT, AV_SAMPLE_FMT_FLTP:
                return plane.withMemoryRebound(to: Float.self, capacity: index + 1) { $0[index] }
            case AV_SAMPLE_FMT_S16, AV_SAMPLE_FMT_S16P:
                return plane.withMemoryRebound(to: Int16.self, capacity: index + 1) { Float($0[index]) / 32768 }
            case AV_SAMPLE_FMT_S32, AV_SAMPLE_FMT_S32P:
                return plane.withMemoryRebound(to: Int32.self, capacity: index + 1) { Float($0[index]) / 2_147_483_648 }
            default:
                return 0
            }
        }
        samplesDecoded += Int64(count)
        for channel in 0..<channels {
            // A stream with fewer channels than announced repeats its first one.
            let source = min(channel, inChannels - 1)
            pending[channel].reserveCapacity(pending[channel].count + count)
            for i in 0..<count { pending[channel].append(sample(source, i)) }
        }
    }

    private func encodeOneFrame() throws -> [EncodedPacket] {
        guard let frame = av_frame_alloc() else { throw FFmpegError("av_frame_alloc", message: "out of memory") }
        var owned: UnsafeMutablePointer<AVFrame>? = frame
        defer { av_frame_free(&owned) }
        frame.pointee.nb_samples = Int32(frameSize)
        frame.pointee.format = AV_SAMPLE_FMT_FLTP.rawValue
        frame.pointee.sample_rate = Int32(sampleRate)
        try FFmpegError.check(av_channel_layout_copy(&frame.pointee.ch_layout, &encoder.pointee.ch_layout), "av_channel_layout_copy")
        try FFmpegError.check(av_frame_get_buffer(frame, 0), "av_frame_get_buffer (audio)")
        for channel in 0..<channels {
            guard let plane = frame.pointee.extended_data[channel] else { continue }
            plane.withMemoryRebound(to: Float.self, capacity: frameSize) { dst in
                pending[channel].withUnsafeBufferPointer { src in dst.update(from: src.baseAddress!, count: frameSize) }
            }
            pending[channel].removeFirst(frameSize)
        }
        frame.pointee.pts = samplesEncoded
        samplesEncoded += Int64(frameSize)
        try FFmpegError.check(avcodec_send_frame(encoder, frame), "avcodec_send_frame (AAC)")
        var out: [EncodedPacket] = []
        while true {
            let rc = avcodec_receive_packet(encoder, packet)
            if rc == cffmpeg_averror_eagain() || rc == cffmpeg_averror_eof() { return out }
            try FFmpegError.check(rc, "avcodec_receive_packet (AAC)")
            out.append(EncodedPacket(data: Array(UnsafeBufferPointer(start: packet.pointee.data, count: Int(packet.pointee.size))),
                                     pts: packet.pointee.pts, dts: packet.pointee.dts, isKeyframe: true))
            av_packet_unref(packet)
        }
    }
}
