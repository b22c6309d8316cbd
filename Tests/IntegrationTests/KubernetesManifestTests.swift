import Foundation
import Testing

/// deploy/kubernetes/storecast.yaml: valid against Kubernetes' own schemas (kubernetes-validate,
/// strict, 1.30), and true to the executables it runs and to the keys each pod may hold
/// (deploy/kubernetes/check.py: every flag exists in the executable's --help, each pod mounts
/// exactly its role's secret key, servers and only servers get the allow-list).
@Suite struct KubernetesManifestTests {
    static var manifest: URL { TestEnvironment.repositoryRoot.appendingPathComponent("deploy/kubernetes/storecast.yaml") }
    static var checker: String { TestEnvironment.repositoryRoot.appendingPathComponent("deploy/kubernetes/check.py").path }
    static var binDirectory: String { (try? TestEnvironment.binary("storecast"))?.deletingLastPathComponent().path ?? "" }

    @Test func theManifestsAreValidKubernetes() async throws {
        let (status, output) = try await ServiceProcess.run(try TestEnvironment.testTool("venv/bin/kubernetes-validate"), ["-k", "1.30.0", "--strict", Self.manifest.path])
        #expect(status == 0, "\(output)")
        #expect(output.components(separatedBy: " passed for resource ").count - 1 == 12, "every resource validated:\n\(output)")
    }

    @Test func theManifestsMatchTheExecutablesAndTheirKeys() async throws {
        let (status, output) = try await ServiceProcess.run(try TestEnvironment.testTool("venv/bin/python"), [Self.checker, Self.manifest.path, Self.binDirectory])
        #expect(status == 0 && output.contains("6 workloads, 0 problems"), "\(output)")
    }

    /// The checker finds what it is for: a flag the executable lacks, and a pod holding another
    /// role's secret key.
    @Test func theCheckerCatchesAWrongFlagAndAStolenKey() async throws {
        let text = try String(contentsOf: Self.manifest, encoding: .utf8)
            .replacingOccurrences(of: "{ key: transcoder.key, path: transcoder.key }", with: "{ key: ingest.key, path: ingest.key }")
            .replacingOccurrences(of: "\"--slots\", \"2\"", with: "\"--slot\", \"2\"")
        let broken = FileManager.default.temporaryDirectory.appendingPathComponent("storecast-k8s-\(UUID().uuidString.prefix(8)).yaml")
        try text.write(to: broken, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: broken) }
        let (status, output) = try await ServiceProcess.run(try TestEnvironment.testTool("venv/bin/python"), [Self.checker, broken.path, Self.binDirectory])
        #expect(status == 1, "\(output)")
        #expect(output.contains("storecast-transcoder has no option --slot") && output.contains("its role transcoder needs exactly transcoder.key"), "\(output)")
    }
}
