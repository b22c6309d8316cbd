/// Fair share of disk: a tenant's recordings and DVR media against its storage quota
/// (`tenants.storage_quota_bytes`, set by the operator). Pure: a packager asks it before every
/// recorded or archived segment, with what it knows of the tenant's use, and carries out the
/// answer (write it, or stop that recording / leave that segment out of the DVR archive).
public struct StorageQuota: Sendable, Equatable {
    /// What a tenant may keep on disk, in bytes.
    public var quotaBytes: Int64
    /// The tenant's recordings as PostgreSQL last reported them, less this packager's recordings
    /// in progress (which it counts itself, byte for byte).
    public var recordedBytes: Int64

    /// 100 GiB: about 37 hours of the full ladder (6 Mb/s, 2, 0.8, 0.4 and audio).
    public static let defaultQuotaBytes: Int64 = 100 << 30

    public init(quotaBytes: Int64, recordedBytes: Int64) {
        self.quotaBytes = quotaBytes
        self.recordedBytes = recordedBytes
    }

    /// What a tenant holds on this packager beyond what PostgreSQL has: recordings being written
    /// and the DVR window's files.
    public struct Local: Sendable, Equatable {
        public var recording: Int64 = 0
        public var dvr: Int64 = 0
        public init(recording: Int64 = 0, dvr: Int64 = 0) {
            self.recording = recording
            self.dvr = dvr
        }
    }

    public enum Decision: Sendable, Equatable {
        case write
        /// Over the quota: the reason, for the recording's row, the log and the seller.
        case refuse(String)
    }

    /// Whether `adding` more bytes of `tenant` fit. Unknown quota (the database has not answered
    /// yet): written, and checked again once it has.
    public static func decide(_ quota: StorageQuota?, tenant: String, local: Local, adding: Int64) -> Decision {
        guard let quota else { return .write }
        let used = quota.recordedBytes + local.recording + local.dvr
        guard used + adding > quota.quotaBytes else { return .write }
        return .refuse("tenant \(tenant)'s storage quota is used up: \(format(used)) of \(format(quota.quotaBytes)) "
                       + "(recordings \(format(quota.recordedBytes + local.recording)), DVR \(format(local.dvr))). "
                       + "Delete recordings, or ask the operator to raise the quota (PUT /v1/tenants/\(tenant)/storage-quota).")
    }

    /// Bytes for people: 1.5 GB, 420 KB, 12 B (powers of 1000, as disks are sold).
    public static func format(_ bytes: Int64) -> String {
        let units: [(Double, String)] = [(1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "KB")]
        for (size, unit) in units where Double(bytes) >= size {
            let value = Double(bytes) / size
            return value >= 100 ? "\(Int(value.rounded())) \(unit)" : "\((value * 10).rounded() / 10) \(unit)"
        }
        return "\(bytes) B"
    }
}
