internal import CFFmpeg

/// The compressed video formats ingest accepts.
public enum VideoCodecID: String, Sendable {
    case h264, hevc, av1
    /// Still images (a slate picture), not a publish codec.
    case mjpeg
}

/// Owns a libavcodec video decoder (H.264, HEVC or AV1). Blocking and CPU-bound: run it on a
/// dedicated thread.
public final class VideoDecoder {
    private let context: UnsafeMutablePointer<AVCodecContext>
    private let packet: UnsafeMutablePointer<AVPacket>

    /// - Parameters:
    ///   - codec: the stream's codec.
    ///   - configuration: `avcC`, `hvcC` or `av1C` (the sequence header's record).
    public init(codec codecID: VideoCodecID, configuration avcC: [UInt8], threads: Int = 1) throws {
        let found: UnsafePointer<AVCodec>?
        switch codecID {
        case .h264: found = avcodec_find_decoder(AV_CODEC_ID_H264)
        case .hevc: found = avcodec_find_decoder(AV_CODEC_ID_HEVC)
        case .av1: found = avcodec_find_decoder_by_name("libdav1d") ?? avcodec_find_decoder(AV_CODEC_ID_AV1)
        case .mjpeg: found = avcodec_find_decoder(AV_CODEC_ID_MJPEG)
        }
        guard let codec = found else { throw FFmpegError("avcodec_find_decoder", message: "libavcodec has no \(codecID.rawValue) decoder") }
        guard let ctx = avcodec_alloc_context3(codec) else { throw FFmpegError("avcodec_alloc_context3", message: "out of memory") }
        var c: UnsafeMutablePointer<AVCodecContext>? = ctx
        do { try setExtradata(avcC, on: ctx) } catch {
            avcodec_free_context(&c)
            throw error
        }
        ctx.pointee.thread_count = Int32(threads)
        ctx.pointee.thread_type = FF_THREAD_SLICE
        ctx.pointee.pkt_timebase = AVRational(num: 1, den: 1000)
        let rc = avcodec_open2(ctx, codec, nil)
        guard rc >= 0, let pkt = av_packet_alloc() else {
            avcodec_free_context(&c)
            throw FFmpegError(code: rc < 0 ? rc : -12, "avcodec_open2 (\(codecID.rawValue) decoder)")
        }
        context = ctx
        packet = pkt
    }

    deinit {
        var c: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&c)
        var p: UnsafeMutablePointer<AVPacket>? = packet
        av_packet_free(&p)
    }

    /// Decodes one access unit (length-prefixed NAL units, or AV1 OBUs) and returns the frames that
    /// became ready (none while the decoder fills, several after a flush).
    public func decode(_ data: [UInt8], pts: Int64, dts: Int64) throws -> [VideoFrame] {
        try FFmpegError.check(av_new_packet(packet, Int32(data.count)), "av_new_packet")
        defer { av_packet_unref(packet) }
        data.withUnsafeBufferPointer { packet.pointee.data.update(from: $0.baseAddress!, count: data.count) }
        packet.pointee.pts = pts
        packet.pointee.dts = dts
        let rc = avcodec_send_packet(context, packet)
        if rc < 0 && rc != cffmpeg_averror_eagain() {
            // A corrupt frame is the publisher's problem, not ours: report it and keep going.
            throw FFmpegError(code: rc, "avcodec_send_packet")
        }
        return try receiveFrames()
    }

    public func flush() throws -> [VideoFrame] {
        _ = avcodec_send_packet(context, nil)
        return try receiveFrames()
    }

    private func receiveFrames() throws -> [VideoFrame] {
        var frames: [VideoFrame] = []
        while true {
            guard let frame = av_frame_alloc() else { throw FFmpegError("av_frame_alloc", message: "out of memory") }
            let rc = avcodec_receive_frame(context, frame)
            if rc < 0 {
                var f: UnsafeMutablePointer<AVFrame>? = frame
                av_frame_free(&f)
                if rc == cffmpeg_averror_eagain() || rc == cffmpeg_averror_eof() { return frames }
                throw FFmpegError(code: rc, "avcodec_receive_frame")
            }
            if frame.pointee.best_effort_timestamp != cffmpeg_nopts_value() {
                frame.pointee.pts = frame.pointee.best_effort_timestamp
            }
            frames.append(VideoFrame(taking: frame))
        }
    }
}
