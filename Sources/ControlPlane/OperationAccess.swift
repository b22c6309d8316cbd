import Hummingbird

/// Runs before one /v1 operation, once ``APIAuthenticator`` has named the caller: whether the
/// caller may call it (``AccessPolicy``), its body capped at ``ControlAPI/maximumBodyBytes`` or the
/// operation's own lower cap (413 over it, before anything reads it), and the caller handed to the handler
/// (``Caller/principal``). Every authenticated /v1 route goes through it, hand-registered or
/// generated from the document, so no route can forget the check (the public ones, a public
/// stream's feed and events, are GETs whose handlers decide).
struct OperationAccess: RouterMiddleware {
    typealias Context = APIRequestContext
    let access: RouteAccess
    var bodyLimit = ControlAPI.maximumBodyBytes

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if access == .publicStream {
            // Anyone (the shoppers' feed): no bearer token is asked for, and none is used.
            var request = request
            do { _ = try await request.collectBody(upTo: bodyLimit) } catch { throw Self.tooLarge(bodyLimit) }
            return try await Caller.$principal.withValue(nil) { try await next(request, context) }
        }
        guard let principal = context.principal else { throw APIError.unauthorized }
        switch AccessPolicy.decide(principal, access, tenant: context.parameters.get("tenant")) {
        case .allow: break
        case .notFound(let message): throw APIError.notFound(message)
        case .forbidden(let message): throw APIError.forbidden(message)
        }
        var request = request
        do { _ = try await request.collectBody(upTo: bodyLimit) } catch { throw Self.tooLarge(bodyLimit) }
        return try await Caller.$principal.withValue(principal) { try await next(request, context) }
    }

    static func tooLarge(_ limit: Int) -> APIError {
        APIError(status: .contentTooLarge, code: "body_too_large", message: "Request bodies are limited to \(limit) bytes here.")
    }
}

/// Who is calling, for handlers generated from the document (their input has no request
/// context); set by ``OperationAccess`` for the handler's task.
enum Caller {
    @TaskLocal static var principal: Principal?
}
