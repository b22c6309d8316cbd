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
/// Files count against their tenant's storage quota (`TenantStorage`): a segment that would go
/// past it is not archived either.
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
    private let storage: TenantStorage?
    /// The size of every file on disk, by path (touched only on the write queue).
    private let sizes = Mutex<[String: Int64]>([:])

    public init(root: String, logger: Logger, maximumQueuedBytes: Int = DVRArchive.maximumQueuedBytes, storage: TenantStorage? = nil) {
        self.root = URL(fileURLWithPath: root).standardizedFileURL.path
        self.logger = logger
        self.limit = maximumQueuedBytes
        self.storage = storage
    }

    /// The tenant of a stream key (`tenant/stream`).
    static func tenant(_ key: String) -> String { String(key.prefix { $0 != "/" }) }

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
        let tenant = Self.tenant(key)
        if let storage, case .refuse = storage.reserve(tenant, Int64(size), for: .dvr) { return false }
        guard queuedBytes.add(size, ordering: .relaxed).newValue <= limit else {
            queuedBytes.subtract(size, ordering: .relaxed)
            storage?.add(tenant, -Int64(size), for: .dvr)
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
                let previous = sizes.withLock { $0.updateValue(Int64(size), forKey: file.path) } ?? 0
                if previous > 0 { storage?.add(tenant, -previous, for: .dvr) }  // the same file again
            } catch {
                storage?.add(tenant, -Int64(size), for: .dvr)
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
        writes.async { [self] in
            for f in files where (try? FileManager.default.removeItem(at: f)) != nil { released(key, [f.path]) }
        }
    }

    /// Deletes everything of a stream that left memory.
    func deleteStream(_ key: String) {
        guard let dir = try? ContainedPath.join(root, streamKey: key) else { return }
        writes.async { [self] in
            try? FileManager.default.removeItem(atPath: dir)
            released(key, sizes.withLock { $0.keys.filter { $0.hasPrefix(dir + "/") } })
        }
    }

    /// Files of `key` gone from disk: their bytes leave the tenant's use.
    private func released(_ key: String, _ paths: [String]) {
        let freed = sizes.withLock { s in paths.reduce(Int64(0)) { $0 + (s.removeValue(forKey: $1) ?? 0) } }
        if freed > 0 { storage?.add(Self.tenant(key), -freed, for: .dvr) }
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
