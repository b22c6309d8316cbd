internal import CFFmpeg

/// Owns one `AVFrame` of raw video. Frames move between the decoder, scalers and encoders of
/// one transcoding thread; they are not Sendable.
public final class VideoFrame {
    let pointer: UnsafeMutablePointer<AVFrame>

    init(taking pointer: UnsafeMutablePointer<AVFrame>) {
        self.pointer = pointer
    }

    /// A new frame with its own YUV 4:2:0 buffers.
    public convenience init(width: Int, height: Int) throws {
        guard let frame = av_frame_alloc() else { throw FFmpegError("av_frame_alloc", message: "out of memory") }
        frame.pointee.width = Int32(width)
        frame.pointee.height = Int32(height)
        frame.pointee.format = AV_PIX_FMT_YUV420P.rawValue
        var f: UnsafeMutablePointer<AVFrame>? = frame
        let rc = av_frame_get_buffer(frame, 0)
        if rc < 0 {
            av_frame_free(&f)
            throw FFmpegError(code: rc, "av_frame_get_buffer")
        }
        self.init(taking: frame)
    }

    deinit {
        var p: UnsafeMutablePointer<AVFrame>? = pointer
        av_frame_free(&p)
    }

    public var width: Int { Int(pointer.pointee.width) }
    public var height: Int { Int(pointer.pointee.height) }

    /// Presentation timestamp in the producer's time base.
    public var pts: Int64 {
        get { pointer.pointee.pts }
        set { pointer.pointee.pts = newValue }
    }

    /// Paints the whole frame one colour (slates, tests).
    public func fill(luma: UInt8, chroma: UInt8) {
        let f = pointer.pointee
        let planes: [(UnsafeMutablePointer<UInt8>?, Int32, Int, UInt8)] = [
            (f.data.0, f.linesize.0, height, luma),
            (f.data.1, f.linesize.1, (height + 1) / 2, chroma),
            (f.data.2, f.linesize.2, (height + 1) / 2, chroma),
        ]
        for (base, stride, rows, value) in planes {
            guard let base else { continue }
            base.update(repeating: value, count: Int(stride) * rows)
        }
    }

    /// Copies the luma plane row by row (tests and thumbnails).
    public func lumaPlane() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(width * height)
        guard let base = pointer.pointee.data.0 else { return out }
        let stride = Int(pointer.pointee.linesize.0)
        for row in 0..<height {
            out.append(contentsOf: UnsafeBufferPointer(start: base + row * stride, count: width))
        }
        return out
    }
}
