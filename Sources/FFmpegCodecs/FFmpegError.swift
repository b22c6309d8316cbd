internal import CFFmpeg

/// The one error type of the FFmpeg wrapper: the failing call and libav's message for its code.
public struct FFmpegError: Error, CustomStringConvertible, Sendable {
    public let operation: String
    public let code: Int32
    public let message: String

    public var description: String { "\(operation) failed: \(message) (\(code))" }

    static func check(_ code: Int32, _ operation: String) throws {
        if code < 0 { throw FFmpegError(code: code, operation) }
    }

    init(code: Int32, _ operation: String) {
        self.operation = operation
        self.code = code
        var buffer = [CChar](repeating: 0, count: 256)
        av_strerror(code, &buffer, buffer.count)
        self.message = String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    init(_ operation: String, message: String) {
        self.operation = operation
        self.code = -1
        self.message = message
    }
}
