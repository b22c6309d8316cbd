internal import CFFmpeg

/// Gives a decoder context its codec header (avcC, hvcC, OpusHead, …) as extradata, padded as
/// libavcodec requires; the context frees it. Nothing to do for an empty header.
func setExtradata(_ bytes: [UInt8], on context: UnsafeMutablePointer<AVCodecContext>) throws {
    guard !bytes.isEmpty else { return }
    guard let extradata = av_mallocz(bytes.count + Int(AV_INPUT_BUFFER_PADDING_SIZE))?.assumingMemoryBound(to: UInt8.self) else {
        throw FFmpegError("av_mallocz", message: "out of memory")
    }
    bytes.withUnsafeBufferPointer { extradata.update(from: $0.baseAddress!, count: bytes.count) }
    context.pointee.extradata = extradata
    context.pointee.extradata_size = Int32(bytes.count)
}
