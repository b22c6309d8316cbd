import Foundation
@testable import MediaFormats
import StorecastTestSupport
import Testing

/// Inputs that crashed the libFuzzer targets (fuzz/regressions/), replayed through the parsers
/// in the ordinary test run: each must now be an error or a value, never a trap.
@Suite struct FuzzRegressionTests {
    static func inputs(_ target: String) -> [[UInt8]] {
        let dir = Fixtures.repositoryRoot().appendingPathComponent("fuzz/regressions/\(target)")
        let files = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
        return files.sorted().compactMap { try? Array(Data(contentsOf: dir.appendingPathComponent($0))) }
    }

    @Test func hevcInputsParseOrFail() {
        let inputs = Self.inputs("hevc")
        #expect(!inputs.isEmpty, "regression inputs present")
        for bytes in inputs {
            if let record = try? HEVCDecoderConfigurationRecord(parsing: bytes) {
                _ = try? record.parsedSPS()
                _ = record.codecString
            }
            _ = try? HEVCSequenceParameterSet(parsing: bytes)
        }
    }

    @Test func avcInputsParseOrFail() {
        let inputs = Self.inputs("avc")
        #expect(!inputs.isEmpty, "regression inputs present")
        for bytes in inputs + Self.inputs("hevc") {
            _ = try? H264SequenceParameterSet(parsing: bytes)
            if let r = try? AVCDecoderConfigurationRecord(parsing: bytes) { _ = r.serialized() }
        }
    }
}
