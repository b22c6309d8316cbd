import Hummingbird
import Logging
import OpenAPIRuntime

/// Outermost: every failure leaves in ``APIError``'s one JSON shape, Hummingbird's own (an
/// unknown route, a missing parameter) and unexpected ones too (500, logged with the cause,
/// which the caller does not see).
struct APIErrorMiddleware: RouterMiddleware {
    typealias Context = APIRequestContext
    let logger: Logger

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do { return try await next(request, context) } catch {
            let answer = APIError.from(error)
            if let metadata = Self.logged(error, answer: answer, method: "\(request.method)", path: request.uri.path) {
                logger.error("API request failed", metadata: metadata)
            }
            throw answer
        }
    }

    /// What the log says of a failure: nothing for the API's own answers and refusals, and for
    /// an unexpected one its cause. A generated operation's error describes its whole request,
    /// the bearer token included, so only its operation, cause and underlying error are kept.
    static func logged(_ error: any Error, answer: APIError, method: String, path: String) -> Logger.Metadata? {
        let cause: any Error = (error as? ServerError)?.underlyingError ?? error
        guard answer.status.code >= 500, !(cause is APIError) else { return nil }
        var metadata: Logger.Metadata = ["method": "\(method)", "path": "\(path)", "error": "\(cause)"]
        if let generated = error as? ServerError {
            metadata["operation"] = "\(generated.operationID)"
            metadata["cause"] = "\(generated.causeDescription)"
        }
        return metadata
    }
}
