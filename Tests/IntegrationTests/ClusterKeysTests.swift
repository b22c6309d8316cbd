import Foundation
import Logging
import StorecastRuntime
import Testing
import ZeroMQ

/// The keys directory's node keys and the allow-list that follows its file (real files, no
/// sockets: the revocation on live sockets is `HostilePeerTests.aNodesOwnKeyIsRevokedWithoutARestart`).
@Suite struct ClusterKeysTests {
    static func directory() throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("storecast-keys-test-\(UUID().uuidString.prefix(8))").path
        try ClusterKeys.generate(into: dir)
        return dir
    }

    @Test func aNodeGetsItsOwnPairAndIsRevokedAlone() throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try ClusterKeys.addNode("edge-1", role: .transcoder, in: dir)
        try ClusterKeys.addNode("edge-2", role: .transcoder, in: dir)
        let list = try String(contentsOfFile: "\(dir)/allowed_keys", encoding: .utf8)
        #expect(list.contains(" edge-1\n") && list.contains(" edge-2\n") && list.contains(" transcoder\n"), "\(list)")
        let attributes = try FileManager.default.attributesOfItem(atPath: "\(dir)/nodes/edge-1.key")
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600, "a node's secret is 0600")
        // Its pair is the one it connects with; the role's pair stays the server's.
        let security = try ClusterKeys.security(directory: dir, role: .transcoder, node: "edge-1", logger: Logger(label: "test"))
        let public1 = try String(contentsOfFile: "\(dir)/nodes/edge-1.pub", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(security.curve?.clientKeyPair?.publicKey == public1)
        #expect(security.curve?.keyPair.publicKey == (try String(contentsOfFile: "\(dir)/transcoder.pub", encoding: .utf8)).trimmingCharacters(in: .whitespacesAndNewlines))

        #expect(try ClusterKeys.revoke("edge-1", in: dir) == 1)
        let after = try String(contentsOfFile: "\(dir)/allowed_keys", encoding: .utf8)
        #expect(!after.contains(" edge-1") && after.contains(" edge-2\n") && after.contains(" transcoder\n"), "only edge-1 left the list: \(after)")
        #expect(!FileManager.default.fileExists(atPath: "\(dir)/nodes/edge-1.key"))
    }

    @Test(arguments: [("transcoder", "not a role's name"), ("../x", "not a role's name"), ("Edge 1", "not a role's name"), ("edge-2", "already in")])
    func aBadOrTakenNodeNameIsRefused(_ name: String, _ says: String) throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try ClusterKeys.addNode("edge-2", role: .transcoder, in: dir)
        #expect { try ClusterKeys.addNode(name, role: .transcoder, in: dir) } throws: { "\($0)".contains(says) }
        #expect { try ClusterKeys.revoke("nobody", in: dir) } throws: { "\($0)".contains("is not in") }
    }

    /// A server's allow-list follows the file: a name added or taken off counts at the next look
    /// (at most once a second); a file that does not parse keeps the last good list.
    @Test func theAllowListFollowsItsFile() async throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let security = try ClusterKeys.security(directory: dir, role: .packager, node: nil, logger: Logger(label: "test"))
        let allowed = try #require(security.curve?.allowedClients)
        #expect(allowed.admits("transcoder") && !allowed.admits("edge-9"))
        try ClusterKeys.addNode("edge-9", role: .transcoder, in: dir)
        try await Task.sleep(for: .milliseconds(1100))
        #expect(allowed.admits("edge-9"), "an added node is allowed without a restart")
        let key = try #require(CurveKeyPair.decode(try String(contentsOfFile: "\(dir)/nodes/edge-9.pub", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(allowed.name(of: key) == "edge-9")
        try "not a key at all\n".write(toFile: "\(dir)/allowed_keys", atomically: true, encoding: .utf8)
        try await Task.sleep(for: .milliseconds(1100))
        #expect(allowed.admits("edge-9") && allowed.admits("transcoder"), "a broken file keeps the last good list")
        try ClusterKeys.generate(into: dir, replace: true)
        try await Task.sleep(for: .milliseconds(1100))
        #expect(!allowed.admits("edge-9") && allowed.name(of: key) == nil, "new keys replace the list")
    }
}
