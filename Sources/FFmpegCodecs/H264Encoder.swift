internal import CFFmpeg

/// Owns a libx264 encoder opened through libavcodec. Blocking and CPU-bound: run it on a
/// dedicated thread. Keyframes are decided by the caller (``encode(_:forceKeyframe:)``) so
/// every rendition of a ladder has its IDRs at the same timestamps.
public final class H264Encoder {
    public struct Settings: Sendable, Equatable {
        public var width: Int
        public var height: Int
        public var bitrate: Int
        /// Nominal frame rate for rate control.
        public var frameRate: Int
        /// Time base of frame pts (ticks per second).
        public var timescale: Int32
        public var preset: String
        public var tune: String?
        public var threads: Int
        public var profile: String
        /// B-frames between references (0 for the ladder: no reordering delay; a publisher's
        /// encoder in tests uses them).
        public var bFrames = 0

        public init(width: Int, height: Int, bitrate: Int, frameRate: Int = 30, timescale: Int32 = 90_000, preset: String = "veryfast", tune: String? = "zerolatency", threads: Int = 1, profile: String = "high") {
            self.width = width
            self.height = height
            self.bitrate = bitrate
            self.frameRate = frameRate
            self.timescale = timescale
            self.preset = preset
            self.tune = tune
            self.threads = threads
            self.profile = profile
        }
    }

    private let context: UnsafeMutablePointer<AVCodecContext>
    private let packet: UnsafeMutablePointer<AVPacket>
    public let settings: Settings
    /// SPS and PPS in Annex B form (global header), for building the `avcC`.
    public let parameterSets: [UInt8]

    public init(_ settings: Settings) throws {
        guard let codec = avcodec_find_encoder_by_name("libx264") else {
            throw FFmpegError("avcodec_find_encoder_by_name", message: "libavcodec has no libx264 encoder; install Debian's libavcodec (built with x264)")
        }
        guard let ctx = avcodec_alloc_context3(codec) else { throw FFmpegError("avcodec_alloc_context3", message: "out of memory") }
        var c: UnsafeMutablePointer<AVCodecContext>? = ctx
        ctx.pointee.width = Int32(settings.width)
        ctx.pointee.height = Int32(settings.height)
        ctx.pointee.pix_fmt = AV_PIX_FMT_YUV420P
        ctx.pointee.time_base = AVRational(num: 1, den: settings.timescale)
        ctx.pointee.framerate = AVRational(num: Int32(settings.frameRate), den: 1)
        ctx.pointee.bit_rate = Int64(settings.bitrate)
        ctx.pointee.rc_max_rate = Int64(settings.bitrate) * 11 / 10
        ctx.pointee.rc_buffer_size = Int32(clamping: settings.bitrate)
        // Keyframes come only from the caller: a very long GOP and no scene-cut IDRs.
        ctx.pointee.gop_size = Int32(settings.frameRate * 60)
        ctx.pointee.max_b_frames = Int32(settings.bFrames)
        ctx.pointee.thread_count = Int32(settings.threads)
        ctx.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER
        let priv = ctx.pointee.priv_data
        av_opt_set(priv, "preset", settings.preset, 0)
        if let tune = settings.tune { av_opt_set(priv, "tune", tune, 0) }
        av_opt_set(priv, "profile", settings.profile, 0)
        av_opt_set(priv, "forced-idr", "1", 0)
        av_opt_set(priv, "x264-params", "scenecut=0:open-gop=0", 0)
        let rc = avcodec_open2(ctx, codec, nil)
        guard rc >= 0, let pkt = av_packet_alloc() else {
            avcodec_free_context(&c)
            throw FFmpegError(code: rc < 0 ? rc : -12, "avcodec_open2 (libx264 \(settings.width)x\(settings.height))")
        }
        context = ctx
        packet = pkt
        self.settings = settings
        if let extra = ctx.pointee.extradata, ctx.pointee.extradata_size > 0 {
            parameterSets = Array(UnsafeBufferPointer(start: extra, count: Int(ctx.pointee.extradata_size)))
        } else {
            parameterSets = []
        }
    }

    deinit {
        var c: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&c)
        var p: UnsafeMutablePointer<AVPacket>? = packet
        av_packet_free(&p)
    }

    /// Encodes one frame (its pts in `settings.timescale`) and returns the packets that are ready.
    public func encode(_ frame: VideoFrame, forceKeyframe: Bool) throws -> [EncodedPacket] {
        frame.pointer.pointee.pict_type = forceKeyframe ? AV_PICTURE_TYPE_I : AV_PICTURE_TYPE_NONE
        try FFmpegError.check(avcodec_send_frame(context, frame.pointer), "avcodec_send_frame")
        return try receivePackets()
    }

    /// Drains the encoder at end of stream.
    public func flush() throws -> [EncodedPacket] {
        _ = avcodec_send_frame(context, nil)
        return try receivePackets()
    }

    private func receivePackets() throws -> [EncodedPacket] {
        var out: [EncodedPacket] = []
        while true {
            let rc = avcodec_receive_packet(context, packet)
            if rc == cffmpeg_averror_eagain() || rc == cffmpeg_averror_eof() { return out }
            try FFmpegError.check(rc, "avcodec_receive_packet")
            let data = Array(UnsafeBufferPointer(start: packet.pointee.data, count: Int(packet.pointee.size)))
            out.append(EncodedPacket(data: data, pts: packet.pointee.pts, dts: packet.pointee.dts, isKeyframe: packet.pointee.flags & AV_PKT_FLAG_KEY != 0))
            av_packet_unref(packet)
        }
    }
}
