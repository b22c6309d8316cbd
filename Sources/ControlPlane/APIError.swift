import Foundation
import HTTPTypes
import Hummingbird

/// Every API failure as JSON: `{"error": {"code": "...", "message": "..."}}` with a 4xx/5xx status.
struct APIError: Error, HTTPResponseError {
    let status: HTTPResponse.Status
    let code: String
    let message: String

    func response(from request: Request, context: some RequestContext) throws -> Response {
        let body: [String: [String: String]] = ["error": ["code": code, "message": message]]
        let data = try JSONEncoder().encode(body)
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    static func badRequest(_ message: String) -> APIError { APIError(status: .badRequest, code: "bad_request", message: message) }
    static func notFound(_ message: String) -> APIError { APIError(status: .notFound, code: "not_found", message: message) }
    static func conflict(_ message: String) -> APIError { APIError(status: .conflict, code: "conflict", message: message) }
    static let unauthorized = APIError(status: .unauthorized, code: "unauthorized", message: "Send the operator token as 'Authorization: Bearer <token>'.")
    static let unavailable = APIError(status: .serviceUnavailable, code: "database_unavailable", message: "The metadata database is unreachable; retry shortly.")
}
