internal import CFFmpeg

/// Owns one `AVFrame` of raw video. Frames move between the decoder, scalers and encoders of
/// one transcoding thread; they are not Sendable.
public final class VideoFrame {
    let pointer: UnsafeMutablePointer<AVFrame>

    init(taking pointer: UnsafeMutablePointer<AVFrame>) {
        self.pointer = pointer
    }

    /// A new frame with its own YUV 4:2:0 buffers: video range for encoders, or full range
    /// (`fullRange`) for JPEG stills.
    public convenience init(width: Int, height: Int, fullRange: Bool = false) throws {
        guard let frame = av_frame_alloc() else { throw FFmpegError("av_frame_alloc", message: "out of memory") }
        frame.pointee.width = Int32(width)
        frame.pointee.height = Int32(height)
        frame.pointee.format = (fullRange ? AV_PIX_FMT_YUVJ420P : AV_PIX_FMT_YUV420P).rawValue
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

    /// Darkens the picture in place towards black and grey (a slate made from the last frame):
    /// luma and chroma move towards their neutral values by `factor` (0 black, 1 unchanged).
    /// Only for 8-bit YUV 4:2:0 frames this process allocated (scaler output).
    public func dim(by factor: Double) {
        let f = pointer.pointee
        let scale = Int(max(0, min(1, factor)) * 256)
        let planes: [(UnsafeMutablePointer<UInt8>?, Int32, Int, Int, Int)] = [
            (f.data.0, f.linesize.0, width, height, 16),
            (f.data.1, f.linesize.1, (width + 1) / 2, (height + 1) / 2, 128),
            (f.data.2, f.linesize.2, (width + 1) / 2, (height + 1) / 2, 128),
        ]
        for (base, stride, columns, rows, neutral) in planes {
            guard let base else { continue }
            for row in 0..<rows {
                let line = base + row * Int(stride)
                for x in 0..<columns {
                    line[x] = UInt8(clamping: neutral + (Int(line[x]) - neutral) * scale / 256)
                }
            }
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
