import Foundation
import HLS
import Logging
import Metrics
import PostgresClient
import StorecastRuntime
import Synchronization

/// Writes recorded sessions to disk, off the live path: the packaging thread hands over finished
/// segments (no copy, arrays are shared) and returns at once; files are written on the
/// recorder's own serial queue. Whether a stream records, and the recording row, live in
/// PostgreSQL (written on the database thread). At session end each rendition gets a VOD
/// playlist (`EXT-X-PLAYLIST-TYPE:VOD`, `EXT-X-ENDLIST`) and the recording becomes ready. Any
/// write error (a full disk) marks the recording failed with the reason and stops writing it;
/// so does a disk too slow to keep up (`maximumQueuedBytes` waiting). A recording that reaches its
/// tenant's storage quota (`TenantStorage`) stops there: what was written gets its VOD playlists
/// and the row says `truncated`, with the reason. Live serving never waits.
public final class Recorder: Sendable {
    public static let maximumQueuedBytes = 256 << 20

    enum Job: Sendable {
        case start(key: String, tenant: String, stream: String)
        case decided(key: String, recording: (id: Int64, path: String, tenant: String)?)
        case segment(key: String, rendition: String, initSegment: [UInt8], segment: PackagedSegment, targetDuration: Double)
        case end(key: String, master: String?)
        case overflow(key: String)
    }

    /// One rendition's files so far.
    struct RenditionLog {
        var entries: [PlaylistSegment] = []
        var lastInit: [UInt8]?
        var inits = 0
        var targetDuration = 1.0
    }

    struct Active {
        var id: Int64
        var tenant: String
        var path: URL
        var renditions: [String: RenditionLog] = [:]
        var bytes: Int64 = 0
        /// Bytes last written to the row (other packagers count them against the quota).
        var reported: Int64 = 0
        /// The program date-time the recording covers (seconds since 1970), for its product cards.
        var covers: ClosedRange<Double>?

        /// The longest rendition's recorded seconds.
        var duration: Double { renditions.values.map { $0.entries.reduce(0) { $0 + $1.duration } }.max() ?? 0 }
    }

    /// A recording in progress reports its size to its row every this many bytes.
    static let progressEvery: Int64 = 1 << 20

    enum Phase {
        case deciding([Job])
        case recording(Active)
        /// Stopped at the tenant's quota: the session's end only adds the master playlist here.
        case truncated(URL)
        case off
    }

    private let queue = DispatchQueue(label: "storecast.recorder")
    /// Where deleted recordings' files are removed: apart from the writes of live recordings (a
    /// long recording is thousands of files), which never touch a deleted one's directory.
    private let removals = DispatchQueue(label: "storecast.recorder.removals")
    private let phases = Mutex<[String: Phase]>([:])
    private let queuedBytes = Atomic<Int>(0)
    private let database: PostgresExecutor
    private let writes: DatabaseWriteBehind
    private let root: String
    private let node: String
    private let logger: Logger
    private let storage: TenantStorage
    private let failures = Counter(label: "storecast_packager_recordings_failed_total")
    private let written = Counter(label: "storecast_packager_recorded_bytes_total")
    private let truncations = Counter(label: "storecast_packager_recordings_truncated_total")

    public init(writes: DatabaseWriteBehind, root: String, node: String, storage: TenantStorage, logger: Logger) {
        self.storage = storage
        self.database = writes.database
        self.writes = writes
        self.root = URL(fileURLWithPath: root).standardizedFileURL.path
        self.node = node
        self.logger = logger
        database.submit({ db in
            let n = try RecordingStore.failLeftovers(db, node: node)
            if n > 0 { logger.warning("recordings left open by a previous run marked failed", metadata: ["count": "\(n)"]) }
        }, onError: { error in logger.error("cannot close leftover recordings", metadata: ["error": "\(error)"]) })
    }

    // MARK: Called from the packaging thread; never blocks.

    func streamStarted(key: String, tenant: String, stream: String) { enqueue(.start(key: key, tenant: tenant, stream: stream)) }

    func segment(key: String, rendition: String, initSegment: [UInt8], segment: PackagedSegment, targetDuration: Double) {
        let size = segment.bytes.count
        guard queuedBytes.add(size, ordering: .relaxed).newValue <= Self.maximumQueuedBytes else {
            queuedBytes.subtract(size, ordering: .relaxed)
            enqueue(.overflow(key: key))
            return
        }
        enqueue(.segment(key: key, rendition: rendition, initSegment: initSegment, segment: segment, targetDuration: targetDuration))
    }

    func streamEnded(key: String, master: String?) { enqueue(.end(key: key, master: master)) }

    /// Waits until everything handed over so far is on disk (tests and shutdown).
    public func drain() { queue.sync {} }

    /// Removes the files of recordings a tenant deleted, on a queue of its own; returns the ids
    /// whose files are gone (or were never here). Each directory is built from the names by
    /// ``ContainedPath`` under this recorder's root.
    func removeDeleted(_ deletions: [RecordingDeletion.Pending]) async -> [Int64] {
        await withCheckedContinuation { continuation in
            removals.async { [root, logger] in
                var removed: [Int64] = []
                for deletion in deletions {
                    do {
                        let path = try ContainedPath.join(root, [deletion.tenant, deletion.stream, String(deletion.recordingID)])
                        if FileManager.default.fileExists(atPath: path) { try FileManager.default.removeItem(atPath: path) }
                        removed.append(deletion.recordingID)
                        logger.info("deleted recording's files removed", metadata: ["tenant": "\(deletion.tenant)", "stream": "\(deletion.stream)", "recording": "\(deletion.recordingID)"])
                    } catch let refused as ContainedPath.Refused {
                        removed.append(deletion.recordingID)  // nothing of ours can be there
                        logger.warning("deleted recording's name is not a path under the recordings directory; nothing removed", metadata: ["recording": "\(deletion.recordingID)", "error": "\(refused)"])
                    } catch {
                        logger.warning("cannot remove a deleted recording's files; retried in a while", metadata: ["recording": "\(deletion.recordingID)", "error": "\(error)"])
                    }
                }
                continuation.resume(returning: removed)
            }
        }
    }

    private func enqueue(_ job: Job) {
        queue.async { self.handle(job) }
    }

    // MARK: On the recorder's queue.

    private func handle(_ job: Job) {
        switch job {
        case .start(let key, let tenant, let stream):
            phases.withLock { $0[key] = .deciding([]) }
            let (root, node) = (self.root, self.node)
            let storage = self.storage
            database.submit({ db in
                let recording = try RecordingStore.startIfEnabled(db, tenant: tenant, stream: stream, node: node, root: root)
                if recording != nil, let quota = try? RecordingStore.usage(db, tenants: [tenant], node: node)[tenant] { storage.update(tenant, quota) }
                self.enqueue(.decided(key: key, recording: recording.map { ($0.id, $0.path, tenant) }))
            }, onError: { error in
                self.logger.error("cannot tell whether the stream records; not recording this session", metadata: ["stream": "\(key)", "error": "\(error)"])
                self.enqueue(.decided(key: key, recording: nil))
            })
        case .decided(let key, let recording):
            guard case .deciding(let waiting)? = phases.withLock({ $0[key] }) else { return }
            guard let recording else {
                phases.withLock { $0[key] = .off }
                for case .segment(_, _, _, let s, _) in waiting { queuedBytes.subtract(s.bytes.count, ordering: .relaxed) }
                if waiting.contains(where: { if case .end = $0 { true } else { false } }) { phases.withLock { $0[key] = nil } }
                return
            }
            logger.info("recording", metadata: ["stream": "\(key)", "recording": "\(recording.id)", "path": "\(recording.path)"])
            phases.withLock { $0[key] = .recording(Active(id: recording.id, tenant: recording.tenant, path: URL(fileURLWithPath: recording.path))) }
            for job in waiting { handle(job) }
        case .segment(let key, let rendition, let initSegment, let segment, let target):
            defer { queuedBytes.subtract(segment.bytes.count, ordering: .relaxed) }
            switch phases.withLock({ $0[key] }) {
            case .deciding(var waiting)?:
                waiting.append(job)
                phases.withLock { $0[key] = .deciding(waiting) }
                queuedBytes.add(segment.bytes.count, ordering: .relaxed)  // still held, in the waiting list
            case .recording(var active)?:
                let adding = Int64(segment.bytes.count + (active.renditions[rendition]?.lastInit == initSegment ? 0 : initSegment.count))
                if case .refuse(let reason) = storage.reserve(active.tenant, adding, for: .recording) {
                    truncate(key, active, reason: reason)
                    return
                }
                let before = active.bytes
                do {
                    try append(segment, initSegment: initSegment, rendition: rendition, targetDuration: target, into: &active)
                    if active.bytes - active.reported >= Self.progressEvery {
                        let (id, bytes) = (active.id, active.bytes)
                        active.reported = bytes
                        writes.record("recording progress", key: "recording-progress-\(id)") { try RecordingStore.reportProgress($0, id: id, bytes: bytes) }
                    }
                    phases.withLock { $0[key] = .recording(active) }
                } catch {
                    storage.add(active.tenant, active.bytes - before - adding, for: .recording)  // what was reserved and not written
                    fail(key, active, reason: "writing \(rendition)/\(PlaylistURIs.plain.segment(segment.sequence)) failed: \(MediaFile.reason(error))")
                }
            default: return
            }
        case .end(let key, let master):
            switch phases.withLock({ $0[key] }) {
            case .deciding(var waiting)?:
                waiting.append(job)
                phases.withLock { $0[key] = .deciding(waiting) }
            case .recording(let active)?:
                finalize(key, active, master: master)
            case .truncated(let path)?:
                phases.withLock { $0[key] = nil }
                if let master { try? MediaFile.save(path.appendingPathComponent("master.m3u8").path, Array(master.utf8)) }
            default:
                phases.withLock { $0[key] = nil }
            }
        case .overflow(let key):
            if case .recording(let active)? = phases.withLock({ $0[key] }) {
                fail(key, active, reason: "the disk could not keep up: more than \(Self.maximumQueuedBytes >> 20) MiB waited to be written")
            }
        }
    }

    private func append(_ segment: PackagedSegment, initSegment: [UInt8], rendition: String, targetDuration: Double, into active: inout Active) throws {
        var log = active.renditions[rendition] ?? RenditionLog()
        let dir = URL(fileURLWithPath: try ContainedPath.join(active.path.path, [rendition]))
        if log.lastInit == nil { try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true) }
        var map: String?
        if log.lastInit != initSegment {
            // A new configuration (resolution change): a new init file, announced by EXT-X-MAP.
            map = PlaylistURIs.plain.initSegment(log.inits)
            try MediaFile.save(dir.appendingPathComponent(map!).path, initSegment)
            log.lastInit = initSegment
            log.inits += 1
            active.bytes += Int64(initSegment.count)
        }
        let name = PlaylistURIs.plain.segment(segment.sequence)
        try MediaFile.save(dir.appendingPathComponent(name).path, segment.bytes)
        active.bytes += Int64(segment.bytes.count)
        written.increment(by: segment.bytes.count)
        log.entries.append(PlaylistSegment(
            sequence: log.entries.count, duration: segment.duration, uri: name,
            discontinuity: !log.entries.isEmpty && (segment.discontinuity || (map != nil)),
            programDateTime: segment.programDateTime.map(ProgramDateTime.format), mapURI: log.entries.isEmpty ? nil : map))
        log.targetDuration = max(log.targetDuration, targetDuration)
        active.renditions[rendition] = log
        if let pdt = segment.programDateTime {
            active.covers = min(active.covers?.lowerBound ?? pdt, pdt)...max(active.covers?.upperBound ?? pdt, pdt + segment.duration)
        }
    }

    private func finalize(_ key: String, _ active: Active, master: String?, truncated: String? = nil) {
        phases.withLock { $0[key] = nil }
        let cards = productCards(key, active)
        do {
            for (name, log) in active.renditions {
                let target = max(Int(log.targetDuration.rounded()), Int((log.entries.map(\.duration).max() ?? 1).rounded()), 1)
                var playlist = MediaPlaylist(targetDuration: target, mapURI: PlaylistURIs.plain.initSegment(), segments: log.entries, ended: true, playlistType: "VOD")
                playlist.dateRanges = cards
                let text = playlist.render()
                try MediaFile.save(try ContainedPath.join(active.path.path, [name, "index.m3u8"]), Array(text.utf8))
            }
            if let master { try MediaFile.save(active.path.appendingPathComponent("master.m3u8").path, Array(master.utf8)) }
        } catch {
            fail(key, active, reason: "writing the VOD playlists failed: \(MediaFile.reason(error))")
            return
        }
        let duration = active.duration
        let (id, bytes) = (active.id, active.bytes)
        storage.recordingEnded(active.tenant, bytes: bytes)
        if let reason = truncated {
            writes.record("recording truncated") { try RecordingStore.markTruncated($0, id: id, error: reason, durationSeconds: duration, bytes: bytes) }
            logger.warning("recording stopped at the tenant's storage quota; what was written plays", metadata: ["stream": "\(key)", "recording": "\(id)", "seconds": "\(duration)", "bytes": "\(bytes)", "reason": "\(reason)"])
            return
        }
        writes.record("recording ready") { try RecordingStore.markReady($0, id: id, durationSeconds: duration, bytes: bytes) }
        logger.info("recording ready", metadata: ["stream": "\(key)", "recording": "\(id)", "seconds": "\(duration)", "bytes": "\(bytes)"])
    }

    /// The show's product cards within what the recording covers, so a replay shows them at the
    /// same moments (EXT-X-DATERANGE in its VOD playlists). Read on this queue, waiting at most
    /// 2 s (other recordings' writes queue behind it): without the database the recording is
    /// still written, without cards.
    private func productCards(_ key: String, _ active: Active) -> [DateRange] {
        let parts = key.split(separator: "/", maxSplits: 1).map(String.init)
        guard parts.count == 2, let covers = active.covers else { return [] }
        let found = Mutex<[HighlightStore.Highlight]?>(nil)
        let done = DispatchSemaphore(value: 0)
        database.submit({ db in
            found.withLock { $0 = try? HighlightStore.within(db, tenant: parts[0], stream: parts[1], start: covers.lowerBound, end: covers.upperBound) }
            done.signal()
        }, onError: { _ in done.signal() })
        guard done.wait(timeout: .now() + 2) == .success, let cards = found.withLock({ $0 }) else {
            logger.warning("the recording's product cards could not be read; it is written without them", metadata: ["stream": "\(key)", "recording": "\(active.id)"])
            return []
        }
        return cards.map(HighlightBook.dateRange)
    }

    /// The tenant's quota is reached: what was written becomes a playable (shorter) recording;
    /// with nothing written yet, the recording failed for that reason. Either way it stops.
    private func truncate(_ key: String, _ active: Active, reason: String) {
        truncations.increment()
        guard active.renditions.values.contains(where: { !$0.entries.isEmpty }) else {
            fail(key, active, reason: reason)
            return
        }
        finalize(key, active, master: nil, truncated: reason)
        phases.withLock { $0[key] = .truncated(active.path) }  // the rest of the session is not recorded
    }

    private func fail(_ key: String, _ active: Active, reason: String) {
        phases.withLock { $0[key] = .off }
        failures.increment()
        storage.recordingEnded(active.tenant, bytes: active.bytes)
        logger.error("recording failed; live playback continues", metadata: ["stream": "\(key)", "recording": "\(active.id)", "reason": "\(reason)"])
        let (id, bytes) = (active.id, active.bytes)
        writes.record("recording failed") { try RecordingStore.markFailed($0, id: id, error: reason, bytes: bytes) }
    }
}
