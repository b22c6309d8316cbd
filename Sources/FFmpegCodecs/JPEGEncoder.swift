internal import CFFmpeg

/// Owns libavcodec's MJPEG encoder for still images (feed previews). Takes full-range frames
/// from a ``FrameScaler`` made with `fullRange: true`. Blocking: run it on a dedicated thread.
public final class JPEGEncoder {
    private let context: UnsafeMutablePointer<AVCodecContext>
    private let packet: UnsafeMutablePointer<AVPacket>
    public let width: Int
    public let height: Int

    /// - Parameter quality: JPEG quantiser scale, 2 (best) to 31 (smallest).
    public init(width: Int, height: Int, quality: Int = 5) throws {
        guard let codec = avcodec_find_encoder(AV_CODEC_ID_MJPEG) else {
            throw FFmpegError("avcodec_find_encoder", message: "libavcodec has no MJPEG encoder")
        }
        guard let ctx = avcodec_alloc_context3(codec) else { throw FFmpegError("avcodec_alloc_context3", message: "out of memory") }
        var c: UnsafeMutablePointer<AVCodecContext>? = ctx
        ctx.pointee.width = Int32(width)
        ctx.pointee.height = Int32(height)
        ctx.pointee.pix_fmt = AV_PIX_FMT_YUVJ420P
        ctx.pointee.color_range = AVCOL_RANGE_JPEG
        ctx.pointee.time_base = AVRational(num: 1, den: 90_000)
        ctx.pointee.flags |= AV_CODEC_FLAG_QSCALE
        ctx.pointee.global_quality = Int32(clamping: max(2, min(31, quality))) * FF_QP2LAMBDA
        let rc = avcodec_open2(ctx, codec, nil)
        guard rc >= 0, let pkt = av_packet_alloc() else {
            avcodec_free_context(&c)
            throw FFmpegError(code: rc < 0 ? rc : -12, "avcodec_open2 (mjpeg \(width)x\(height))")
        }
        context = ctx
        packet = pkt
        self.width = width
        self.height = height
    }

    deinit {
        var c: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&c)
        var p: UnsafeMutablePointer<AVPacket>? = packet
        av_packet_free(&p)
    }

    /// One JPEG file (SOI to EOI) of `frame`, which must be this encoder's size.
    public func encode(_ frame: VideoFrame) throws -> [UInt8] {
        frame.pointer.pointee.quality = context.pointee.global_quality
        try FFmpegError.check(avcodec_send_frame(context, frame.pointer), "avcodec_send_frame (mjpeg)")
        let rc = avcodec_receive_packet(context, packet)
        try FFmpegError.check(rc, "avcodec_receive_packet (mjpeg)")
        defer { av_packet_unref(packet) }
        return Array(UnsafeBufferPointer(start: packet.pointee.data, count: Int(packet.pointee.size)))
    }
}
