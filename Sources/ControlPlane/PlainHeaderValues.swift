import HTTPTypes
import OpenAPIRuntime

/// Response headers as the document means them. Generated code writes a header's value as a URI
/// component, percent-encoded (apple/swift-openapi-generator#857, open): a thumbnail's
/// `Location: http://…` went out as `http%3A%2F%2F…`, and `Cache-Control: public, max-age=5` as
/// `public%2C%20max-age%3D5`, which no client or cache reads. Its encoding escapes `%` too, so
/// decoding once gives back exactly the value the handler set. Only the headers the document
/// declares are decoded (``declared``); the runtime's own (`Content-Type`, `Content-Length`) are
/// written plain. Remove this once the generator writes header values as they are.
struct PlainHeaderValues: ServerMiddleware {
    /// Every response header schemas/openapi.yaml declares (`GeneratedAPITests` checks the list
    /// against the document).
    static let declared: [HTTPField.Name] = [.location, .cacheControl, .accessControlAllowOrigin]

    func intercept(_ request: HTTPRequest, body: HTTPBody?, metadata: ServerRequestMetadata, operationID: String,
                   next: @Sendable (HTTPRequest, HTTPBody?, ServerRequestMetadata) async throws -> (HTTPResponse, HTTPBody?)) async throws -> (HTTPResponse, HTTPBody?) {
        var (response, body) = try await next(request, body, metadata)
        response.headerFields = Self.plain(response.headerFields)
        return (response, body)
    }

    /// `fields` with each declared header's value percent-decoded (a value that does not decode
    /// stays as it is).
    static func plain(_ fields: HTTPFields) -> HTTPFields {
        var fields = fields
        for name in declared {
            let values = fields[values: name]
            guard !values.isEmpty else { continue }
            fields[values: name] = values.map { $0.removingPercentEncoding ?? $0 }
        }
        return fields
    }
}
