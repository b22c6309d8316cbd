import Foundation
import Logging
import Metrics
import StorecastRuntime
import Synchronization

/// The DVR window's media on disk. The live window stays in memory (`PackageStore`); every
/// finished segment is also written here, on the archive's own serial queue, so when it scrolls
/// out of memory it stays playable until it is older than the DVR window, then its file is
/// deleted. Reads run on a separate concurrent queue: a viewer seeking back never makes the live
/// edge wait for the disk, and the packaging thread never waits for either. A disk slower than
/// the streams gets at most `maximumQueuedBytes` waiting: past that a segment is not written
/// (counted and logged; seeking back to it answers 503) instead of memory growing without end.
public final class DVRArchive: Sendable {
    public static let maximumQueuedBytes = 256 << 20
    private let root: String
    private let writes = DispatchQueue(label: "storecast.dvr.write")
    private let reads = DispatchQueue(label: "storecast.dvr.read", attributes: .concurrent)
    private let logger: Logger
    private let failures = Counter(label: "storecast_packager_dvr_write_failures_total")
    private let skipped = Counter(label: "storecast_packager_dvr_writes_skipped_total")
    private let queuedBytes = Atomic<Int>(0)
    private let limit: Int

    public init(root: String, logger: Logger, maximumQueuedBytes: Int = DVRArchive.maximumQueuedBytes) {
        self.root = URL(fileURLWithPath: root).standardizedFileURL.path
        self.logger = logger
        self.limit = maximumQueuedBytes
    }

    /// Bytes handed over and not yet on disk.
    public var queued: Int { queuedBytes.load(ordering: .relaxed) }

    /// The segment's file, or nil (logged) when a name would leave the DVR root.
    func path(_ key: String, _ rendition: String, _ sequence: Int) -> URL? {
        do {
            return URL(fileURLWithPath: try ContainedPath.join(root, streamKey: key, [rendition, PlaylistURIs.plain.segment(sequence)]))
        } catch {
            logger.error("DVR path refused", metadata: ["stream": "\(key)", "rendition": "\(rendition)", "error": "\(error)"])
            return nil
        }
    }

    /// Queues the segment's bytes for disk (shared, not copied); returns at once. Returns false
    /// when the disk is too far behind and the segment was not queued.
    @discardableResult
    func write(_ key: String, rendition: String, segment: PackagedSegment) -> Bool {
        guard let file = path(key, rendition, segment.sequence) else { return false }
        let size = segment.bytes.count
        guard queuedBytes.add(size, ordering: .relaxed).newValue <= limit else {
            queuedBytes.subtract(size, ordering: .relaxed)
            skipped.increment()
            logger.error("DVR disk is behind: segment not written; seeking back to it will fail. Check the disk under --dvr-dir or shorten --dvr-window.",
                         metadata: ["file": "\(file.path)", "queued_bytes": "\(queued)"])
            return false
        }
        writes.async { [self] in
            defer { queuedBytes.subtract(size, ordering: .relaxed) }
            do {
                try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
                try MediaFile.save(file.path, segment.bytes)
            } catch {
                failures.increment()
                logger.error("DVR segment not written; seeking back to it will fail", metadata: ["file": "\(file.path)", "reason": "\(MediaFile.reason(error))"])
            }
        }
        return true
    }

    /// Holds the write queue until `release` returns (tests: a disk that stalls).
    func stall(until release: @escaping @Sendable () -> Void) { writes.async { release() } }

    /// Deletes segments that left the DVR window (after any write still queued for them).
    func delete(_ key: String, rendition: String, sequences: [Int]) {
        guard !sequences.isEmpty else { return }
        let files = sequences.compactMap { path(key, rendition, $0) }
        writes.async { for f in files { try? FileManager.default.removeItem(at: f) } }
    }

    /// Deletes everything of a stream that left memory.
    func deleteStream(_ key: String) {
        guard let dir = try? ContainedPath.join(root, streamKey: key) else { return }
        writes.async { try? FileManager.default.removeItem(atPath: dir) }
    }

    /// Reads one archived segment off the request path's threads.
    func read(_ key: String, rendition: String, sequence: Int) async -> [UInt8]? {
        guard let file = path(key, rendition, sequence) else { return nil }
        return await withCheckedContinuation { continuation in
            reads.async { continuation.resume(returning: FileManager.default.contents(atPath: file.path).map { Array($0) }) }
        }
    }

    /// Waits until every queued write and delete is done (tests, shutdown).
    public func drain() { writes.sync {} }
}
