import Logging
import Metrics
import PostgresClient
import StorecastRuntime
import Synchronization

/// This packager's side of each tenant's storage quota: the bytes it holds for the tenant
/// (recordings being written, DVR files), and the quota and recorded bytes PostgreSQL last
/// reported (refreshed every few seconds while the tenant has anything here). The decisions
/// are `StorageQuota`'s; this carries the numbers between threads (the recorder's queue, the
/// DVR archive's). Without a database nothing is limited.
///
/// With several packagers a tenant can go past its quota by what the others write between two
/// refreshes (every 2 s; their recordings report progress every MiB).
public final class TenantStorage: Sendable {
    public enum Use: String, Sendable { case recording, dvr }

    private struct State {
        var quotas: [String: StorageQuota] = [:]
        var local: [String: StorageQuota.Local] = [:]
        /// Tenants refused so far (logged once per tenant until the quota admits again).
        var full: Set<String> = []
        /// When each tenant last wrote or asked to write here.
        var lastActive: [String: ContinuousClock.Instant] = [:]
    }

    /// A tenant with nothing here for this long is forgotten (its quota is read again when it next
    /// writes).
    static let forgetAfter: Duration = .seconds(60)

    private let state = Mutex(State())
    private let logger: Logger
    private let refusals = Counter(label: "storecast_packager_storage_quota_refusals_total")

    public init(logger: Logger) {
        self.logger = logger
    }

    /// Whether `bytes` more of `tenant`'s `use` fit; if so they are counted at once (under the
    /// same lock, so two writers cannot both take the last room), else the refusal is counted
    /// and logged. A write that then fails gives back what it did not write (`add` negative).
    func reserve(_ tenant: String, _ bytes: Int64, for use: Use) -> StorageQuota.Decision {
        let (decision, first) = state.withLock { s -> (StorageQuota.Decision, Bool) in
            let d = StorageQuota.decide(s.quotas[tenant], tenant: tenant, local: s.local[tenant] ?? .init(), adding: bytes)
            s.lastActive[tenant] = .now  // refreshed from now on
            switch d {
            case .write:
                s.full.remove(tenant)
                Self.count(bytes, for: use, in: &s, tenant)
                return (d, false)
            case .refuse: return (d, s.full.insert(tenant).inserted)
            }
        }
        if case .refuse(let reason) = decision {
            refusals.increment()
            if first { logger.warning("storage quota reached: recordings stop and DVR segments are not archived until space is freed", metadata: ["tenant": "\(tenant)", "use": "\(use.rawValue)", "reason": "\(reason)"]) }
        }
        return decision
    }

    /// `bytes` of `tenant` now on disk here (negative: deleted).
    func add(_ tenant: String, _ bytes: Int64, for use: Use) {
        state.withLock { s in
            s.lastActive[tenant] = .now
            Self.count(bytes, for: use, in: &s, tenant)
        }
    }

    private static func count(_ bytes: Int64, for use: Use, in s: inout State, _ tenant: String) {
        var local = s.local[tenant] ?? .init()
        switch use {
        case .recording: local.recording = max(0, local.recording + bytes)
        case .dvr: local.dvr = max(0, local.dvr + bytes)
        }
        s.local[tenant] = local
    }

    /// A recording of `bytes` ended: its row now holds them, so they count as recorded until the
    /// next refresh reads them back.
    func recordingEnded(_ tenant: String, bytes: Int64) {
        state.withLock { s in
            let recording = s.local[tenant]?.recording ?? 0
            s.local[tenant]?.recording = max(0, recording - bytes)
            s.quotas[tenant]?.recordedBytes += bytes
        }
    }

    /// The latest quota and recorded bytes of `tenant` (from PostgreSQL).
    func update(_ tenant: String, _ quota: StorageQuota) {
        state.withLock { s in
            s.quotas[tenant] = quota
            if s.lastActive[tenant] == nil { s.lastActive[tenant] = .now }
        }
    }

    /// Tenants with anything on this packager, or active lately: their figures are worth
    /// refreshing. Forgets the others.
    func activeTenants(now: ContinuousClock.Instant = .now) -> [String] {
        state.withLock { s in
            for (tenant, last) in s.lastActive where (s.local[tenant] ?? .init()) == .init() && now - last > Self.forgetAfter {
                s.lastActive[tenant] = nil; s.local[tenant] = nil; s.quotas[tenant] = nil; s.full.remove(tenant)
            }
            return s.lastActive.keys.sorted()
        }
    }

    /// Reads the quotas of the active tenants every `interval` until cancelled.
    func refresh(from database: PostgresExecutor, node: String, every interval: Duration = .seconds(2)) async {
        while !Task.isCancelled {
            let tenants = activeTenants()
            if !tenants.isEmpty {
                do {
                    let usage = try await database.run { try RecordingStore.usage($0, tenants: tenants, node: node) }
                    for (tenant, quota) in usage { update(tenant, quota) }
                } catch {
                    logger.warning("cannot read tenants' storage quotas; using the last figures", metadata: ["error": "\(error)"])
                }
            }
            try? await Task.sleep(for: interval)
        }
    }
}
