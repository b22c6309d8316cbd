import ControlPlane
import Testing

/// Who may call what on the control API (issue 16), as a golden table: the caller, the route's
/// access, the tenant in its path, and the answer.
@Suite struct AccessPolicyTests {
    static let reader = Principal.tenant("shop", keyID: "k1", scopes: [.streamsRead])
    static let full = Principal.tenant("shop", keyID: "k2", scopes: Set(APIScope.allCases))
    static let operatorOnly = AccessPolicy.Decision.forbidden("Only the platform's operator may call this; API keys cannot.")

    static let cases: [(name: String, principal: Principal, access: RouteAccess, tenant: String?, expected: AccessPolicy.Decision)] = [
        ("the operator, a tenant's route", .operator, .tenant(.streamsWrite), "shop", .allow),
        ("the operator, its own route", .operator, .operator, nil, .allow),
        ("the operator, a tenant that may not exist", .operator, .tenant(nil), "ghost", .allow),
        ("a key, its tenant, its scope", reader, .tenant(.streamsRead), "shop", .allow),
        ("a key, its tenant, any key's route", reader, .tenant(nil), "shop", .allow),
        ("a key, its tenant, a scope it lacks", reader, .tenant(.streamsWrite), "shop",
         .forbidden("This API key lacks the streams:write scope; make a key that has it.")),
        ("a key, another tenant: 404, never 403", full, .tenant(.streamsRead), "other", .notFound("no tenant other")),
        ("a key, another tenant, a scope it lacks: still 404", reader, .tenant(.playbackSign), "other", .notFound("no tenant other")),
        ("a key, another tenant's operator route: 404", full, .operator, "other", .notFound("no tenant other")),
        ("a key, its tenant's operator route", full, .operator, "shop", operatorOnly),
        ("a key, a route outside tenants", full, .operator, nil, operatorOnly),
        ("a key with every scope is still not the operator", full, .operator, "shop", operatorOnly),
        ("a stream's public events: the handler decides", reader, .publicStream, "other", .allow),
    ]

    @Test(arguments: cases.indices)
    func decisions(_ i: Int) {
        let c = Self.cases[i]
        #expect(AccessPolicy.decide(c.principal, c.access, tenant: c.tenant) == c.expected, "\(c.name)")
    }
}
