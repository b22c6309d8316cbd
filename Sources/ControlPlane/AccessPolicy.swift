/// Whether a caller may call a route, as a pure decision (issue 16), tested with a table.
///
/// - The operator may call every route.
/// - A tenant's key may call its own tenant's routes whose scope it holds. A route of another
///   tenant is answered 404, exactly as for a tenant that does not exist, so a key learns
///   nothing about what else is on the platform (never 403 there).
/// - A key on an operator-only route of its own tenant, or a route outside any tenant, gets 403
///   with what it lacks: it already knows its own tenant exists.
public enum AccessPolicy {
    public enum Decision: Sendable, Equatable {
        case allow
        case notFound(String)
        case forbidden(String)
    }

    /// `tenant` is the route's `:tenant` (nil for routes outside a tenant).
    public static func decide(_ principal: Principal, _ access: RouteAccess, tenant: String?) -> Decision {
        guard case .tenant(let own, _, let scopes) = principal else { return .allow }
        switch access {
        case .publicStream:
            return .allow  // its handler checks a private stream's token
        case _ where tenant.map { $0 != own } ?? false:
            return .notFound(notFoundMessage(tenant!))
        case .operator:
            return .forbidden("Only the platform's operator may call this; API keys cannot.")
        case .tenant(let scope):
            guard tenant != nil else { return .forbidden("Only the platform's operator may call this; API keys cannot.") }
            if let scope, !scopes.contains(scope) { return .forbidden("This API key lacks the \(scope.rawValue) scope; make a key that has it.") }
            return .allow
        }
    }

    /// The same words for a tenant that does not exist and one that is not the caller's.
    public static func notFoundMessage(_ tenant: String) -> String { "no tenant \(tenant)" }
}
