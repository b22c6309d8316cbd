import BinaryCoding

/// Gathers the messages for one peer into one ZeroMQ message: a ``WireMessage/batch(_:)``, or
/// the message itself when only one was added. Each message is encoded straight into the batch's
/// buffer as it is added (no per-message buffer).
public struct WireBatchWriter: Sendable {
    /// Bytes of the batch header: version, kind, u32 count.
    private static let headerSize = 6
    private var writer: ByteWriter
    public private(set) var count = 0

    public init(capacity: Int = 64 * 1024) {
        writer = ByteWriter(capacity: capacity)
        writer.u8(WireCodec.version)
        writer.u8(WireMessage.Kind.batch.rawValue)
        writer.u32(0)
    }

    public var isEmpty: Bool { count == 0 }
    /// Bytes gathered so far.
    public var byteCount: Int { writer.count }

    /// Adds `message` after those already added (a batch adds its messages, in order).
    public mutating func append(_ message: WireMessage) {
        count += WireCodec.appendEntries([message], into: &writer)
        writer.patchU32(at: 2, UInt32(count))
    }

    /// The ZeroMQ message body for everything added (nil when nothing was).
    public func encoded() -> [UInt8]? {
        switch count {
        case 0: return nil
        case 1: return Array(writer.bytes[(Self.headerSize + 4)...])
        default: return writer.bytes  // the count is kept current by append: no copy here
        }
    }
}
