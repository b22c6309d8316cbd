import StorecastRuntime
import Testing

/// A tenant's storage quota as a golden table: what PostgreSQL reports, what this packager holds,
/// and the bytes about to be written, against the decision.
@Suite struct StorageQuotaTests {
    struct Row: Sendable, CustomStringConvertible {
        let name: String
        let quota: StorageQuota?
        let local: StorageQuota.Local
        let adding: Int64
        /// nil: written; else the reason contains these.
        let refusedWith: [String]?
        var description: String { name }
    }

    static let rows: [Row] = [
        Row(name: "quota not known yet: written (checked once the database answers)", quota: nil, local: .init(recording: 1 << 40), adding: 1, refusedWith: nil),
        Row(name: "well under", quota: .init(quotaBytes: 1_000_000, recordedBytes: 100_000), local: .init(recording: 50_000, dvr: 50_000), adding: 10_000, refusedWith: nil),
        Row(name: "exactly at the quota fits", quota: .init(quotaBytes: 1_000_000, recordedBytes: 600_000), local: .init(recording: 200_000, dvr: 100_000), adding: 100_000, refusedWith: nil),
        Row(name: "one byte over", quota: .init(quotaBytes: 1_000_000, recordedBytes: 600_000), local: .init(recording: 200_000, dvr: 100_000), adding: 100_001,
            refusedWith: ["tenant shop's storage quota is used up", "900 KB of 1.0 MB", "recordings 800 KB", "DVR 100 KB", "PUT /v1/tenants/shop/storage-quota"]),
        Row(name: "DVR alone fills it", quota: .init(quotaBytes: 500_000, recordedBytes: 0), local: .init(dvr: 499_000), adding: 2_000, refusedWith: ["DVR 499 KB"]),
        Row(name: "other packagers' recordings count", quota: .init(quotaBytes: 2_000_000_000, recordedBytes: 1_999_999_999), local: .init(), adding: 2, refusedWith: ["2.0 GB of 2.0 GB"]),
        Row(name: "a zero quota refuses the first byte", quota: .init(quotaBytes: 0, recordedBytes: 0), local: .init(), adding: 1, refusedWith: ["0 B of 0 B"]),
        Row(name: "over already (the quota was lowered): refused", quota: .init(quotaBytes: 100, recordedBytes: 5_000), local: .init(), adding: 1, refusedWith: ["5.0 KB of 100 B"]),
    ]

    @Test(arguments: rows) func decides(_ row: Row) {
        let decision = StorageQuota.decide(row.quota, tenant: "shop", local: row.local, adding: row.adding)
        switch (decision, row.refusedWith) {
        case (.write, nil): break
        case (.refuse(let reason), let expected?):
            for part in expected { #expect(reason.contains(part), "\(row.name): \(reason) should say \(part)") }
        default: Issue.record("\(row.name): \(decision)")
        }
    }

    @Test(arguments: [(Int64(0), "0 B"), (999, "999 B"), (1_000, "1.0 KB"), (1_540, "1.5 KB"), (123_456_789, "123 MB"), (107_374_182_400, "107 GB"), (5_000_000_000_000, "5.0 TB")])
    func formatsBytesForPeople(_ bytes: Int64, _ text: String) {
        #expect(StorageQuota.format(bytes) == text)
    }
}
