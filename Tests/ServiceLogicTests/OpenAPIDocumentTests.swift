@testable import ControlPlane
import Foundation
import StorecastTestSupport
import Testing

/// The API serves the document it is held to, and its docs page lists every route.
@Suite struct OpenAPIDocumentTests {
    @Test func theServedDocumentIsSchemasOpenAPIYAML() throws {
        let file = try String(contentsOf: Fixtures.repositoryRoot().appendingPathComponent("schemas/openapi.yaml"), encoding: .utf8)
        #expect(OpenAPIDocument.yaml == file, "schemas/openapi.yaml changed: run schemas/embed_openapi.py")
    }

    @Test func theDocsPageListsEveryRouteWithItsAccess() {
        let listed = Set(OpenAPIDocument.operations().map { "\($0.method) \($0.path.replacingOccurrences(of: "{", with: ":").replacingOccurrences(of: "}", with: "")) \($0.access)" })
        let registered = Set(ControlAPI.routes().map { "\($0.method) \($0.path) \($0.access.name)" })
        // Generated or hand-written, never both: a route registered twice would answer from one of them.
        let twice = Dictionary(grouping: ControlAPI.routes(), by: \.description).filter { $0.value.count > 1 }.keys.sorted()
        #expect(twice.isEmpty, "registered twice: \(twice)")
        #expect(listed == registered, "only in the document: \(listed.subtracting(registered).sorted()); only registered: \(registered.subtracting(listed).sorted())")
        #expect(OpenAPIDocument.operations().allSatisfy { !$0.summary.isEmpty }, "every operation has a summary")
        let page = OpenAPIDocument.page()
        for route in ControlAPI.routes() {
            let documented = route.path.replacing(/:(\w+)/) { "{\($0.1)}" }
            #expect(page.contains("<code>\(documented)</code>"), "\(route) is on /docs")
        }
    }

    /// An operation's own body cap, below the API's 64 KiB, as the document sets it: only a
    /// card's post (1 KiB, as IVS caps timed metadata); a value that is not a number is none.
    @Test func bodyLimitsComeFromTheDocument() {
        let limits = OpenAPIDocument.operations().filter { $0.bodyLimit != nil }.map { "\($0.method) \($0.path) \($0.bodyLimit!)" }
        #expect(limits == ["POST /v1/tenants/{tenant}/streams/{stream}/highlights 1024"], "\(limits)")
        let text = """
          /v1/x:
            post:
              summary: X.
              x-storecast-access: operator
              x-storecast-body-limit: 100
          /v1/y:
            post:
              summary: Y.
              x-storecast-access: operator
              x-storecast-body-limit: lots
        components:
        """
        #expect(OpenAPIDocument.operations(text).map(\.bodyLimit) == [100, nil])
    }

    /// The operations whose bodies may send null (merge patches, decoded by our own types):
    /// a stream's settings and its ladder profile, and none other.
    @Test func mergePatchesComeFromTheDocument() {
        let patches = OpenAPIDocument.operations().filter(\.mergePatch).map { "\($0.method) \($0.path)" }
        #expect(patches == ["PATCH /v1/tenants/{tenant}/streams/{stream}", "PUT /v1/tenants/{tenant}/streams/{stream}/ladder-profile"], "\(patches)")
    }
}
