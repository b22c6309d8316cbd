import Synchronization

/// The newest lease ticket of one stream's lease (the assign's, then each `leaseRenewal`'s),
/// written on the worker's ZeroMQ thread and read on the job's thread, where its announces are
/// sent to the packager (schemas/wire.md: tickets expire, ingest renews them).
final class CurrentLeaseTicket: Sendable {
    private let bytes: Mutex<[UInt8]>
    init(_ ticket: [UInt8]) { bytes = Mutex(ticket) }
    var value: [UInt8] { bytes.withLock { $0 } }
    func renew(_ ticket: [UInt8]) { bytes.withLock { $0 = ticket } }
}
