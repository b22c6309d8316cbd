import Foundation
import HTTPTypes
import Hummingbird
import OpenAPIHummingbird
import OpenAPIRuntime

/// The transport that operations generated from schemas/openapi.yaml (swift-openapi-generator)
/// register on: each goes to swift-openapi-hummingbird's router transport behind
/// ``OperationAccess`` with the access its `x-storecast-access` states, and into the
/// ``RouteBook``'s list that the isolation test walks. An operation the document gives no
/// access refuses to register, so the API does not start with a route nobody guards.
struct DocumentedOperations: ServerTransport {
    enum Refusal: Error, CustomStringConvertible {
        case noAccess(HTTPRequest.Method, String)
        var description: String {
            switch self {
            case .noAccess(let method, let path): "\(method) \(path) has no x-storecast-access in schemas/openapi.yaml; add one"
            }
        }
    }

    let book: RouteBook
    /// `x-storecast-access` by "METHOD /path" as the document writes them.
    let access: [String: RouteAccess]

    init(book: RouteBook, document: String = OpenAPIDocument.yaml) {
        self.book = book
        var access: [String: RouteAccess] = [:]
        for operation in OpenAPIDocument.operations(document) {
            access["\(operation.method) \(operation.path)"] = RouteAccess(name: operation.access)
        }
        self.access = access
    }

    func register(_ handler: @escaping @Sendable (HTTPRequest, HTTPBody?, ServerRequestMetadata) async throws -> (HTTPResponse, HTTPBody?),
                  method: HTTPRequest.Method, path: String) throws {
        guard let access = access["\(method.rawValue) \(path)"] else { throw Refusal.noAccess(method, path) }
        book.documented(method, path, access).register(handler, method: method, path: path)
    }

    /// How generated code reads and writes JSON here: keys sorted, not pretty-printed (as the
    /// hand-written routes), times with milliseconds (as the database gives them).
    static let configuration = Configuration(dateTranscoder: MillisecondDates(), jsonEncodingOptions: [.sortedKeys])
}
