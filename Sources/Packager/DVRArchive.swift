import Foundation
import Logging
import Metrics

/// The DVR window's media on disk. The live window stays in memory (`PackageStore`); every
/// finished segment is also written here, on the archive's own serial queue, so when it scrolls
/// out of memory it stays playable until it is older than the DVR window, then its file is
/// deleted. Reads run on a separate concurrent queue: a viewer seeking back never makes the live
/// edge wait for the disk, and the packaging thread never waits for either.
public final class DVRArchive: Sendable {
    private let root: URL
    private let writes = DispatchQueue(label: "storecast.dvr.write")
    private let reads = DispatchQueue(label: "storecast.dvr.read", attributes: .concurrent)
    private let logger: Logger
    private let failures = Counter(label: "storecast_packager_dvr_write_failures_total")

    public init(root: String, logger: Logger) {
        self.root = URL(fileURLWithPath: root).standardizedFileURL
        self.logger = logger
    }

    func path(_ key: String, _ rendition: String, _ sequence: Int) -> URL {
        root.appendingPathComponent(key).appendingPathComponent(rendition).appendingPathComponent(PlaylistURIs.plain.segment(sequence))
    }

    /// Queues the segment's bytes for disk (shared, not copied); returns at once.
    func write(_ key: String, rendition: String, segment: PackagedSegment) {
        let file = path(key, rendition, segment.sequence)
        let (logger, failures) = (self.logger, self.failures)
        writes.async {
            do {
                try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
                try MediaFile.save(file.path, segment.bytes)
            } catch {
                failures.increment()
                logger.error("DVR segment not written; seeking back to it will fail", metadata: ["file": "\(file.path)", "reason": "\(MediaFile.reason(error))"])
            }
        }
    }

    /// Deletes segments that left the DVR window (after any write still queued for them).
    func delete(_ key: String, rendition: String, sequences: [Int]) {
        guard !sequences.isEmpty else { return }
        let files = sequences.map { path(key, rendition, $0) }
        writes.async { for f in files { try? FileManager.default.removeItem(at: f) } }
    }

    /// Deletes everything of a stream that left memory.
    func deleteStream(_ key: String) {
        let dir = root.appendingPathComponent(key)
        writes.async { try? FileManager.default.removeItem(at: dir) }
    }

    /// Reads one archived segment off the request path's threads.
    func read(_ key: String, rendition: String, sequence: Int) async -> [UInt8]? {
        let file = path(key, rendition, sequence)
        return await withCheckedContinuation { continuation in
            reads.async { continuation.resume(returning: FileManager.default.contents(atPath: file.path).map { Array($0) }) }
        }
    }

    /// Waits until every queued write and delete is done (tests, shutdown).
    public func drain() { writes.sync {} }
}
