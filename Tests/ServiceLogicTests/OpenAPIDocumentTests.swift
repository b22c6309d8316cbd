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
}
