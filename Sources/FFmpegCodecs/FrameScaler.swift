internal import CFFmpeg

/// Owns a libswscale context that converts decoded frames to one rendition's size (YUV 4:2:0,
/// video range; full range when `fullRange`, for JPEG stills).
public final class FrameScaler {
    private var context: OpaquePointer?
    private var sourceKey: (Int, Int, Int32) = (0, 0, -1)
    public let width: Int
    public let height: Int
    public let fullRange: Bool

    public init(width: Int, height: Int, fullRange: Bool = false) {
        self.width = width
        self.height = height
        self.fullRange = fullRange
    }

    deinit { sws_freeContext(context) }

    /// Scales `frame` into a new frame of this scaler's size, keeping its pts. Re-creates the
    /// context when the source size or format changes (publisher resolution change).
    public func scale(_ frame: VideoFrame) throws -> VideoFrame {
        let src = frame.pointer.pointee
        let key = (Int(src.width), Int(src.height), src.format)
        if context == nil || key != sourceKey {
            sws_freeContext(context)
            context = sws_getContext(src.width, src.height, AVPixelFormat(rawValue: src.format),
                                     Int32(width), Int32(height), fullRange ? AV_PIX_FMT_YUVJ420P : AV_PIX_FMT_YUV420P, SWS_BICUBIC, nil, nil, nil)
            sourceKey = key
            guard context != nil else { throw FFmpegError("sws_getContext", message: "cannot scale \(key.0)x\(key.1) to \(width)x\(height)") }
        }
        let out = try VideoFrame(width: width, height: height, fullRange: fullRange)
        let rc = withUnsafePointer(to: src.data) { srcData in
            withUnsafePointer(to: src.linesize) { srcLines in
                withUnsafePointer(to: out.pointer.pointee.data) { dstData in
                    withUnsafePointer(to: out.pointer.pointee.linesize) { dstLines in
                        srcData.withMemoryRebound(to: UnsafePointer<UInt8>?.self, capacity: 8) { sd in
                            srcLines.withMemoryRebound(to: Int32.self, capacity: 8) { sl in
                                dstData.withMemoryRebound(to: UnsafeMutablePointer<UInt8>?.self, capacity: 8) { dd in
                                    dstLines.withMemoryRebound(to: Int32.self, capacity: 8) { dl in
                                        sws_scale(context, sd, sl, 0, src.height, dd, dl)
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        guard rc > 0 else { throw FFmpegError(code: rc, "sws_scale") }
        out.pts = frame.pts
        return out
    }
}
