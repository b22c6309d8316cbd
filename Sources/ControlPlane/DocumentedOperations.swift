import Foundation
import HTTPTypes
import Hummingbird
import OpenAPIHummingbird
import OpenAPIRuntime

/// The transport that operations generated from schemas/openapi.yaml (swift-openapi-generator)
/// register on: each goes to swift-openapi-hummingbird's router transport behind
/// ``OperationAccess`` with the access its `x-storecast-access` states (and the body cap its
/// `x-storecast-body-limit` sets, where it has one), and into the
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
    /// `x-storecast-body-limit`, for the operations that set one.
    let bodyLimits: [String: Int]
    /// The operations whose bodies are merge patches (`x-storecast-merge-patch`): null may be sent.
    let mergePatches: Set<String>

    init(book: RouteBook, document: String = OpenAPIDocument.yaml) {
        self.book = book
        var access: [String: RouteAccess] = [:], bodyLimits: [String: Int] = [:], mergePatches: Set<String> = []
        for operation in OpenAPIDocument.operations(document) {
            let key = "\(operation.method) \(operation.path)"
            access[key] = RouteAccess(name: operation.access)
            bodyLimits[key] = operation.bodyLimit
            if operation.mergePatch { mergePatches.insert(key) }
        }
        self.access = access
        self.bodyLimits = bodyLimits
        self.mergePatches = mergePatches
    }

    func register(_ handler: @escaping @Sendable (HTTPRequest, HTTPBody?, ServerRequestMetadata) async throws -> (HTTPResponse, HTTPBody?),
                  method: HTTPRequest.Method, path: String) throws {
        let key = "\(method.rawValue) \(path)"
        guard let access = access[key] else { throw Refusal.noAccess(method, path) }
        let refusingNull = !mergePatches.contains(key)
        book.documented(method, path, access, bodyLimit: bodyLimits[key]).register({ request, body, metadata in
            let (request, body) = try await Self.asJSON(request, body, refusingNull: refusingNull)
            return try await handler(request, body, metadata)
        }, method: method, path: path)
    }

    /// The request as the hand-written API took it: JSON in and out whatever `Accept` and
    /// `Content-Type` say (generated code checks `Accept` only after the handler ran, so a key
    /// would be made and its one showing lost in a 500), and, `refusingNull`, a field sent as
    /// `null` refused by name (generated decoders would take it as absent; only merge patches,
    /// decoded by our own types, take null). The body is already capped (``OperationAccess``).
    static func asJSON(_ request: HTTPRequest, _ body: HTTPBody?, refusingNull: Bool = true) async throws -> (HTTPRequest, HTTPBody?) {
        var request = request
        request.headerFields[.accept] = nil
        request.headerFields[.contentType] = nil
        guard let body else { return (request, nil) }
        let bytes = try await [UInt8](collecting: body, upTo: ControlAPI.maximumBodyBytes)
        if refusingNull, let object = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any],
           let field = object.filter({ $0.value is NSNull }).keys.sorted().first {
            throw APIError.badRequest("\(field) cannot be null; leave it out to keep its value or take the default", field: field)
        }
        return (request, HTTPBody(bytes))
    }

    /// How generated code reads and writes JSON here: keys sorted, not pretty-printed (as the
    /// hand-written routes), times with milliseconds (as the database gives them).
    static let configuration = Configuration(dateTranscoder: MillisecondDates(), jsonEncodingOptions: [.sortedKeys])
}
