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
        // A public operation (the shoppers' feed) asks for no bearer token and uses none.
        var principal: Principal? = nil
        if access != .publicStream {
            guard let caller = context.principal else { throw APIError.unauthorized }
            switch AccessPolicy.decide(caller, access, tenant: context.parameters.get("tenant")) {
            case .allow: principal = caller
            case .notFound(let message): throw APIError.notFound(message)
            case .forbidden(let message): throw APIError.forbidden(message)
            }
        }
        var request = request
        do { _ = try await request.collectBody(upTo: bodyLimit) } catch {
            throw APIError(status: .contentTooLarge, code: "body_too_large", message: "Request bodies are limited to \(bodyLimit) bytes here.")
        }
        return try await Caller.$principal.withValue(principal) { try await next(request, context) }
    }
}

/// Who is calling, for handlers generated from the document (their input has no request
/// context); set by ``OperationAccess`` for the handler's task.
enum Caller {
    @TaskLocal static var principal: Principal?
}
