/// Everything for one peer in one turn, as one or more batches that each stay within what a
/// receiver accepts (``WireCodec/maximumBatch`` messages) and within a byte budget, in order.
public struct WireBatchQueue: Sendable {
    /// A batch is closed once it holds this many bytes (a single larger message still goes, alone).
    public static let defaultMaximumBytes = 4 * 1024 * 1024

    private var batches: [WireBatchWriter] = []
    private let capacity: Int
    private let maximumCount: Int
    private let maximumBytes: Int

    /// `capacity`: bytes to reserve for the first batch.
    public init(capacity: Int = 4096, maximumCount: Int = WireCodec.maximumBatch, maximumBytes: Int = defaultMaximumBytes) {
        self.capacity = max(64, min(capacity, maximumBytes))
        self.maximumCount = max(1, maximumCount)
        self.maximumBytes = maximumBytes
    }

    /// Messages added so far.
    public var count: Int { batches.reduce(0) { $0 + $1.count } }

    /// Adds `message` after those already added (a batch adds its messages, in order).
    public mutating func append(_ message: WireMessage) {
        if case .batch(let messages) = message {
            for inner in messages { append(inner) }
            return
        }
        if let i = batches.indices.last, batches[i].count < maximumCount, batches[i].isEmpty || batches[i].byteCount + message.payloadSize + 64 <= maximumBytes {
            batches[i].append(message)
        } else {
            var next = WireBatchWriter(capacity: batches.isEmpty ? capacity : min(maximumBytes, max(capacity, message.payloadSize + 64)))
            next.append(message)
            batches.append(next)
        }
    }

    /// The ZeroMQ message bodies to send, in order: one per batch (a batch of one message is
    /// that message).
    public func encoded() -> [[UInt8]] {
        batches.compactMap { $0.encoded() }
    }
}
