import HTTPTypes
import Hummingbird

/// In front of the API's router: a HEAD is answered as its GET would be (the same route, the
/// same authentication and scopes, the same status and headers) without the body. RFC 9110
/// 9.3.2: a server that answers GET answers HEAD; before, every HEAD got 404 (an uptime check on
/// `/healthz`, a client asking a document's size). A refusal keeps its status and headers too.
/// It wraps the router's responder, not a middleware of it: Hummingbird finds a request's route
/// by its method before any middleware runs. A GET's streamed body is never started (the events
/// stream only subscribes, and lets go when the body is dropped).
public struct HeadAsGet<Router: HTTPResponderBuilder>: HTTPResponderBuilder where Router.Responder.Context: RequestContext {
    let router: Router

    public func buildResponder() -> Responder<Router.Responder> { Responder(wrapped: router.buildResponder()) }

    public struct Responder<Wrapped: HTTPResponder>: HTTPResponder where Wrapped.Context: RequestContext {
        let wrapped: Wrapped

        public func respond(to request: Request, context: Wrapped.Context) async throws -> Response {
            guard request.method == .head else { return try await wrapped.respond(to: request, context: context) }
            var head = request.head
            head.method = .get
            let get = Request(head: head, body: request.body)
            do {
                return try await wrapped.respond(to: get, context: context).createHeadResponse()
            } catch let error as HTTPResponseError {
                return try error.response(from: get, context: context).createHeadResponse()
            }
        }
    }
}
