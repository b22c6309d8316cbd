import Foundation
import HTTPTypes
import Hummingbird
import OpenAPIRuntime
import StorecastRuntime

/// Every API failure as JSON, one shape for every 4xx and 5xx (issue 16):
/// `{"error": {"code": "...", "message": "...", "field": "..." or null}}`. `field` names the
/// body field or parameter at fault when there is one.
struct APIError: Error, HTTPResponseError {
    let status: HTTPResponse.Status
    let code: String
    let message: String
    var field: String? = nil
    /// Seconds, sent as `Retry-After` (429, 503).
    var retryAfter: Int? = nil

    private struct Body: Encodable {
        struct Detail: Encodable {
            let code: String, message: String, field: String?
            func encode(to encoder: any Encoder) throws {
                var c = encoder.container(keyedBy: CodingKeys.self)
                try c.encode(code, forKey: .code)
                try c.encode(message, forKey: .message)
                try c.encode(field, forKey: .field)  // null when none: one shape
            }
            enum CodingKeys: String, CodingKey { case code, message, field }
        }
        let error: Detail
    }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        let data = try JSONEncoder().encode(Body(error: .init(code: code, message: message, field: field)))
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        if let retryAfter { headers[.retryAfter] = "\(retryAfter)" }
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    static func badRequest(_ message: String, field: String? = nil) -> APIError { APIError(status: .badRequest, code: "bad_request", message: message, field: field) }
    static func notFound(_ message: String) -> APIError { APIError(status: .notFound, code: "not_found", message: message) }
    static func forbidden(_ message: String) -> APIError { APIError(status: .forbidden, code: "forbidden", message: message) }
    static func conflict(_ message: String, field: String? = nil) -> APIError { APIError(status: .conflict, code: "conflict", message: message, field: field) }
    static let unauthorized = APIError(status: .unauthorized, code: "unauthorized", message: "Send the operator's token or a tenant's API key as 'Authorization: Bearer <token>'.")
    static let unavailable = APIError(status: .serviceUnavailable, code: "database_unavailable", message: "The metadata database is unreachable; retry shortly.", retryAfter: 5)
    static func tooManyFailures(wait seconds: Int) -> APIError {
        APIError(status: .tooManyRequests, code: "too_many_failed_attempts",
                 message: "Too many wrong tokens from this address; wait \(seconds) s, then check the token.", retryAfter: seconds)
    }
    static func tooManyKeyFailures(keyID: String, wait seconds: Int) -> APIError {
        APIError(status: .tooManyRequests, code: "too_many_failed_attempts",
                 message: "Too many wrong secrets for API key \(keyID); this one was not checked. Wait \(seconds) s, then check the key (its right secret is not refused).", retryAfter: seconds)
    }

    /// An error of Hummingbird's own (no route, a bad parameter) or an unexpected one, in this shape.
    static func from(_ error: any Error) -> APIError {
        if let error = error as? APIError { return error }
        if let error = error as? ServerError { return from(error) }
        if let error = error as? HTTPError {
            let code: String
            switch error.status.code {
            case 404: code = "not_found"
            case 405: code = "method_not_allowed"
            case 413: code = "body_too_large"
            case 400..<500: code = "bad_request"
            default: code = "internal"
            }
            return APIError(status: error.status, code: code, message: error.body ?? (error.status.code == 404 ? "No such route. The API's routes are listed in the README." : error.status.reasonPhrase))
        }
        return APIError(status: .internalServerError, code: "internal", message: "The API failed unexpectedly; the operator's log has the details.")
    }

    /// A generated operation's failure: its handler's own ``APIError``, or a request the
    /// document does not allow (a body or parameter of the wrong type, an unknown enum value,
    /// a wrong content type), which never reached the handler: 400, naming the field.
    static func from(_ error: ServerError) -> APIError {
        if let own = error.underlyingError as? APIError { return own }
        if let problem = error.underlyingError as? JSONFieldProblem { return .badRequest(problem.message, field: problem.field) }  // a merge patch's own decoder
        if error.operationInput == nil, let decoding = error.underlyingError as? DecodingError {
            let field = Self.field(decoding) ?? Self.queryItem(decoding, in: error.request) ?? Self.mistypedQueryItem(decoding, in: error.request)
            let subject = Self.path(decoding) ?? field ?? "a parameter or the body"
            let name = Self.keys(decoding).last { $0.intValue == nil }?.stringValue ?? field
            return .badRequest(Self.problem(decoding, field: subject, name: name) + "; see \(error.operationID) in /openapi.yaml.", field: field)
        }
        if (400..<500).contains(error.httpStatus.code) {
            return APIError(status: error.httpStatus, code: error.httpStatus == .badRequest ? "bad_request" : "request_refused",
                            message: "The request does not match \(error.operationID) in the API's document (/openapi.yaml): \(error.causeDescription).")
        }
        return from(error.underlyingError)
    }

    /// What is wrong with a field, in words (the decoder's own are Swift's). `name` is the
    /// field's own key, where the document lists the values an enum takes.
    private static func problem(_ error: DecodingError, field: String, name: String?) -> String {
        switch error {
        case .keyNotFound: "\(field) is required"
        case .valueNotFound: "\(field) cannot be null"
        case .typeMismatch(let type, _): "\(field) must be \(kind(type))"
        case .dataCorrupted(let context): outsideEnum(context, field: field, name: name) ?? "\(field) has a value the API does not take (\(context.debugDescription))"
        @unknown default: "\(field) is malformed"
        }
    }

    /// A value outside an enum (the generated type could not be made from it), with the values
    /// the document allows where it lists them; nil for any other corrupted data.
    private static func outsideEnum(_ context: DecodingError.Context, field: String, name: String?) -> String? {
        guard let type = context.debugDescription.firstMatch(of: #/Cannot initialize (\w+)/#).map({ String($0.1) }) else { return nil }
        let given = context.debugDescription.firstMatch(of: #/invalid \w+ value (.*)$/#).map { " (\($0.1))" } ?? ""
        guard let allowed = OpenAPIDocument.allowedValues(type: type, field: name) else { return "\(field) has a value the API does not take\(given)" }
        return "\(field) has a value the API does not take\(given); it takes one of: \(allowed.joined(separator: ", "))"
    }

    /// A query item's enum that failed: its decoder names no key, only the generated type and
    /// the value. The item is the one the request gives that value; failing that, the one the
    /// type is named after (`CurrentPayload` for `current`; a shared parameter's type is named
    /// after its component, `FeedOrder` for `order`, so the value finds it).
    private static func queryItem(_ error: DecodingError, in request: HTTPRequest) -> String? {
        guard case .dataCorrupted(let context) = error, let type = context.debugDescription.firstMatch(of: #/initialize (\w+?)(?:Payload)? from/#)?.1,
              let first = type.first, let items = request.path.flatMap({ URLComponents(string: $0)?.queryItems }) else { return nil }
        if let value = context.debugDescription.firstMatch(of: #/invalid String value (.*)$/#)?.1 {
            let named = Set(items.filter { $0.value.map { $0[...] } == value }.map(\.name))
            if named.count == 1 { return named.first }
        }
        let name = first.lowercased() + type.dropFirst()
        return items.contains { $0.name == name } ? name : nil
    }

    /// A query item of the wrong type (`?limit=abc`): its decoder names no key either. The item
    /// is the one the document declares of that type whose value is not, when exactly one is not.
    private static func mistypedQueryItem(_ error: DecodingError, in request: HTTPRequest) -> String? {
        guard case .typeMismatch(let type, let context) = error, context.codingPath.isEmpty,
              let items = request.path.flatMap({ URLComponents(string: $0)?.queryItems }) else { return nil }
        let fits: (String) -> Bool, declared: String
        switch ObjectIdentifier(type) {
        case ObjectIdentifier(Int.self), ObjectIdentifier(Int64.self), ObjectIdentifier(Int32.self): (fits, declared) = ({ Int64($0) != nil }, "integer")
        case ObjectIdentifier(Double.self): (fits, declared) = ({ Double($0) != nil }, "number")
        case ObjectIdentifier(Bool.self): (fits, declared) = ({ Bool($0) != nil }, "boolean")
        default: return nil
        }
        let ofThatType = OpenAPIDocument.queryParameters(ofType: declared)
        let mistyped = Set(items.filter { ofThatType.contains($0.name) && !fits($0.value ?? "") }.map(\.name))
        return mistyped.count == 1 ? mistyped.first : nil
    }

    private static func kind(_ type: Any.Type) -> String {
        switch ObjectIdentifier(type) {
        case ObjectIdentifier(String.self): "a string"
        case ObjectIdentifier(Bool.self): "true or false"
        case ObjectIdentifier(Int.self), ObjectIdentifier(Int64.self): "a whole number"
        case ObjectIdentifier(Double.self): "a number"
        default: "a \(type)"
        }
    }

    /// The keys down to where decoding failed, the missing one included.
    private static func keys(_ error: DecodingError) -> [any CodingKey] {
        switch error {
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context): context.codingPath
        case .keyNotFound(let key, let context): context.codingPath + [key]
        @unknown default: []
        }
    }

    /// The whole place where decoding failed (`rungs[0].shortSide`), nil when it is one key or none.
    private static func path(_ error: DecodingError) -> String? {
        var keys = keys(error)
        while let last = keys.last, last.intValue == nil, last.stringValue.isEmpty { keys.removeLast() }
        guard keys.count > 1, keys.first?.intValue == nil else { return nil }
        return keys.reduce("") { text, key in key.intValue.map { text + "[\($0)]" } ?? (text.isEmpty ? key.stringValue : text + "." + key.stringValue) }
    }

    /// The first named key where decoding failed (`scopes` for `scopes[2]`).
    private static func field(_ error: DecodingError) -> String? {
        keys(error).first { $0.intValue == nil }?.stringValue
    }
}
