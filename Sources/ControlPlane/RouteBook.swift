import HTTPTypes
import Hummingbird

/// A /v1 route and who may call it.
public struct APIRoute: Sendable, Equatable, CustomStringConvertible {
    public let method: HTTPRequest.Method
    /// As registered, with `:tenant`-style parameters, from the root (`/v1/...`).
    public let path: String
    public let access: RouteAccess
    public var description: String { "\(method) \(path)" }

    public init(method: HTTPRequest.Method, path: String, access: RouteAccess) {
        self.method = method
        self.path = path
        self.access = access
    }
}

/// Registers /v1 routes, each with who may call it: every operation generated from the document
/// (``DocumentedOperations``) runs only once ``OperationAccess`` allowed the caller
/// (``APIAuthenticator`` put it in the context), so no route can forget the check; the one
/// hand-registered route, a stream's events, is public and its handler checks a private
/// stream's token (``openStream(_:_:_:)``). The list of what was registered is what the
/// isolation test walks.
final class RouteBook {
    /// /v1 without the bearer check: routes whose handler decides (``RouteAccess/publicStream``).
    private let open: RouterGroup<APIRequestContext>
    /// The root behind the bearer check, for operations generated with their /v1 paths.
    private let documentedRoot: RouterGroup<APIRequestContext>
    /// The root without it, for generated public operations (the shoppers' feed).
    private let documentedOpen: RouterGroup<APIRequestContext>
    private(set) var routes: [APIRoute] = []

    init(open: RouterGroup<APIRequestContext>, documented: RouterGroup<APIRequestContext>, documentedOpen: RouterGroup<APIRequestContext>) {
        self.open = open
        self.documentedRoot = documented
        self.documentedOpen = documentedOpen
    }

    /// A route anyone may call for a public stream; its handler checks a private one's token.
    func openStream(_ method: HTTPRequest.Method, _ path: String, _ handler: @escaping @Sendable (Request, APIRequestContext) async throws -> Response) {
        routes.append(APIRoute(method: method, path: "/v1/\(path)", access: .publicStream))
        open.on(RouterPath(path), method: method, use: handler)
    }

    /// Where a generated operation registers (`path` as the document writes it, from the root).
    func documented(_ method: HTTPRequest.Method, _ path: String, _ access: RouteAccess, bodyLimit: Int? = nil) -> RouterGroup<APIRequestContext> {
        routes.append(APIRoute(method: method, path: path.replacing(/\{([^}]+)\}/) { ":\($0.1)" }, access: access))
        let root = access == .publicStream ? documentedOpen : documentedRoot
        return root.group().add(middleware: OperationAccess(access: access, bodyLimit: min(bodyLimit ?? ControlAPI.maximumBodyBytes, ControlAPI.maximumBodyBytes)))
    }
}
