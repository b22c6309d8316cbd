import ControlPlane
import Foundation
import Testing

/// schemas/openapi.yaml is the control API's contract (issue 16): the routes the API registers
/// and the document's operations match, with the same access, read by a real YAML parser; the
/// API serves the document and a docs page; and Schemathesis, from PyPI, fuzzes the running API
/// from the document and finds no 5xx, no answer the document does not allow, and no request
/// the document refuses taken (its `negative_data_rejection`: the generated decoders check
/// types, not ranges or lengths, so each handler must).
@Suite(.serialized) struct APIContractTests {
    static let document = TestEnvironment.repositoryRoot.appendingPathComponent("schemas/openapi.yaml").path
    static let checker = TestEnvironment.repositoryRoot.appendingPathComponent("schemas/check_openapi.py").path
    static let schemathesisSettings = TestEnvironment.repositoryRoot.appendingPathComponent("Tests/Tools/schemathesis.toml").path

    static func routesFile(_ routes: [APIRoute]) throws -> String {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("storecast-routes-\(UUID().uuidString.prefix(8)).txt").path
        try routes.map { "\($0.method) \($0.path) \($0.access.name)" }.joined(separator: "\n").write(toFile: file, atomically: true, encoding: .utf8)
        return file
    }

    @Test func theRoutesAreTheDocumentsOperations() async throws {
        let python = try TestEnvironment.testTool("venv/bin/python")
        let file = try Self.routesFile(ControlAPI.routes())
        defer { try? FileManager.default.removeItem(atPath: file) }
        let (status, output) = try await ServiceProcess.run(python, [Self.checker, file, Self.document])
        #expect(status == 0 && output.contains("routes match the document"), "\(output)")

        // The checker can fail: a route the document lacks, and one with other access.
        let extra = try Self.routesFile(ControlAPI.routes() + [APIRoute(method: .get, path: "/v1/undocumented", access: .operator)])
        defer { try? FileManager.default.removeItem(atPath: extra) }
        let caught = try await ServiceProcess.run(python, [Self.checker, extra, Self.document])
        #expect(caught.status != 0 && caught.output.contains("GET /v1/undocumented"), "\(caught.output)")
        let widened = try Self.routesFile(ControlAPI.routes().map { $0.path == "/v1/tenants" && $0.method == .get ? APIRoute(method: .get, path: $0.path, access: .tenant(nil)) : $0 })
        defer { try? FileManager.default.removeItem(atPath: widened) }
        let caughtAccess = try await ServiceProcess.run(python, [Self.checker, widened, Self.document])
        #expect(caughtAccess.status != 0 && caughtAccess.output.contains("GET /v1/tenants tenant"), "\(caughtAccess.output)")
        // And a text that a comma splits inside a flow mapping (YAML cuts it short and reads the
        // rest as a key without a value; swift-openapi-generator refuses such a document).
        let text = try String(contentsOfFile: Self.document, encoding: .utf8)
        let quoted = #"description: "A playback token, for a private stream."}"#
        #expect(text.contains(quoted))
        let split = FileManager.default.temporaryDirectory.appendingPathComponent("storecast-openapi-\(UUID().uuidString.prefix(8)).yaml").path
        try text.replacingOccurrences(of: quoted, with: "description: A playback token, for a private stream.}").write(toFile: split, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: split) }
        let caughtSplit = try await ServiceProcess.run(python, [Self.checker, file, split])
        #expect(caughtSplit.status != 0 && caughtSplit.output.contains("/for a private stream."), "\(caughtSplit.output)")
    }

    @Test func schemathesisFindsNoServerErrorAndNoAnswerOutsideTheDocument() async throws {
        let api = try await TenantAPITests.API()
        defer { api.stop() }
        // Something to find: a tenant with a stream and a key, so not every path is a 404.
        #expect(await api.call("POST", "/v1/tenants", json: #"{"slug":"shop"}"#, token: TestEnvironment.adminToken).status == 201)
        #expect(await api.call("POST", "/v1/tenants/shop/streams", json: #"{"slug":"live"}"#, token: TestEnvironment.adminToken).status == 201)
        _ = try await api.key("shop", scopes: ["streams:read"])

        let served = await api.call("GET", "/openapi.yaml", token: nil)
        let file = try String(contentsOfFile: Self.document, encoding: .utf8)
        #expect(served.status == 200 && served.body == file, "the API serves the document")
        let docs = await api.call("GET", "/docs", token: nil)
        #expect(docs.status == 200 && docs.body.contains("/v1/tenants/{tenant}/api-keys") && docs.body.contains("tenant:streams:read"), "\(docs.body.prefix(500))")

        let schemathesis = try TestEnvironment.testTool("venv/bin/schemathesis")
        let (status, output) = try await ServiceProcess.run(schemathesis, [
            "--config-file", Self.schemathesisSettings, "run", Self.document, "--url", api.base, "--header", "Authorization: Bearer \(TestEnvironment.adminToken)",
            "--checks", "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,negative_data_rejection",
            "--phases", "examples,coverage,fuzzing", "--max-examples", "20", "--workers", "2", "--request-timeout", "10",
            "--warnings", "off", "--no-color",
            // Server-Sent Events stay open: tested in a browser instead (EventStreamTests).
            "--exclude-operation-id", "streamEvents",
        ], timeout: 600)
        #expect(status == 0, "schemathesis found failures:\n\(output.suffix(12000))")
        // It ran: every operation tested, with cases generated (about 1,300 at these settings).
        let generated = output.firstMatch(of: /(\d+) generated, (\d+) passed/).flatMap { Int($0.1) } ?? 0
        #expect(output.contains("Tested: \(ControlAPI.routes().count - 1)") && generated > 200, "\(output.suffix(3000))")
        #expect(!api.process.log.contains("API request failed"), "an unexpected failure (500) in the API's log:\n\(api.process.log.suffix(3000))")
    }
}
