/// Why the chunk layer gave up on a connection. Any of these closes that one connection.
public struct ChunkDecoderError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Reason: Equatable, Sendable {
        case messageTooLarge(Int)
        case invalidChunkSize(UInt32)
        /// A type 1, 2 or 3 header on a chunk stream that never had a type 0 header.
        case missingPreviousHeader(chunkStreamID: UInt32)
        case tooManyChunkStreams
    }
    public let reason: Reason
    public init(reason: Reason) { self.reason = reason }
    public var description: String { "RTMP chunk stream: \(reason)" }
}
