import Hummingbird
import Logging

/// Outermost: every failure leaves in ``APIError``'s one JSON shape, Hummingbird's own (an
/// unknown route, a missing parameter) and unexpected ones too (500, logged with the cause,
/// which the caller does not see).
struct APIErrorMiddleware: RouterMiddleware {
    typealias Context = APIRequestContext
    let logger: Logger

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do { return try await next(request, context) } catch {
            let answer = APIError.from(error)
            if answer.status.code >= 500, !(error is APIError) {
                logger.error("API request failed", metadata: ["method": "\(request.method)", "path": "\(request.uri.path)", "error": "\(error)"])
            }
            throw answer
        }
    }
}
