@testable import ControlPlane
import Foundation
import HTTPTypes
import Hummingbird
import OpenAPIRuntime
import StorecastTestSupport
import Testing

/// The operations served from code generated out of schemas/openapi.yaml: that code is the
/// document's, times keep their milliseconds, access comes from the document, and a request the
/// document does not allow is a 400 in the API's error shape.
@Suite struct GeneratedAPITests {
    @Test func theGeneratedCodeIsTheDocuments() throws {
        let shell = Process()
        shell.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
        shell.arguments = [Fixtures.repositoryRoot().appendingPathComponent("schemas/openapi.yaml").path]
        let pipe = Pipe()
        shell.standardOutput = pipe
        try shell.run()
        shell.waitUntilExit()
        let digest = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).prefix(64)
        #expect(digest.count == 64)
        #expect(String(digest) == GeneratedFrom.documentSHA256, "schemas/openapi.yaml changed: run schemas/generate_api.sh")
    }

    static let times: [(text: String, seconds: Double)] = [
        ("1970-01-01T00:00:00.000Z", 0),
        ("2026-11-27T17:30:00.123Z", 1_795_800_600.123),
        ("2026-11-27T17:30:00.999Z", 1_795_800_600.999),
        ("1969-12-31T23:59:59.999Z", -0.001),
        ("2038-01-19T03:14:08.001Z", 2_147_483_648.001),
    ]

    @Test(arguments: times) func timesKeepTheirMilliseconds(_ row: (text: String, seconds: Double)) throws {
        let date = try MillisecondDates.date(row.text)
        #expect(abs(date.timeIntervalSince1970 - row.seconds) < 0.0005)
        #expect(MillisecondDates.text(date) == row.text)
        #expect(MillisecondDates.text(Date(timeIntervalSince1970: row.seconds)) == row.text)
    }

    @Test func aTimeWithoutFractionIsReadAndOneThatIsNotATimeIsRefused() throws {
        #expect(MillisecondDates.text(try MillisecondDates.date("2026-11-27T17:30:00Z")) == "2026-11-27T17:30:00.000Z")
        #expect(throws: MillisecondDates.Malformed.self) { try MillisecondDates.date("yesterday") }
        #expect(throws: MillisecondDates.Malformed.self) { try MillisecondDates.date("") }
    }

    static let accesses: [(String, RouteAccess?)] = [
        ("operator", .operator), ("tenant", .tenant(nil)), ("tenant:webhooks", .tenant(.webhooks)),
        ("tenant:streams:read", .tenant(.streamsRead)), ("public", .publicStream),
        ("tenant:root", nil), ("admin", nil), ("", nil), ("Tenant", nil),
    ]

    @Test(arguments: accesses) func accessIsReadAsTheDocumentWritesIt(_ row: (String, RouteAccess?)) {
        #expect(RouteAccess(name: row.0) == row.1)
        if let access = row.1 { #expect(access.name == row.0) }
    }

    @Test func anOperationTheDocumentGivesNoAccessDoesNotRegister() throws {
        let document = """
            paths:
              /v1/tenants/{tenant}/api-keys:
                get:
                  operationId: listAPIKeys
                  summary: No access here.
            components:
            """
        let router = Router(context: APIRequestContext.self)
        let book = RouteBook(open: router.group("v1"), documented: router.group(), documentedOpen: router.group())
        let transport = DocumentedOperations(book: book, document: document)
        #expect(transport.access.isEmpty)
        #expect(throws: DocumentedOperations.Refusal.self) {
            try transport.register({ _, _, _ in (HTTPResponse(status: .ok), nil) }, method: .get, path: "/v1/tenants/{tenant}/api-keys")
        }
        #expect(book.routes.isEmpty)
    }

    static func serverError(_ underlying: any Error, input: (any Sendable)?, status: HTTPResponse.Status) -> ServerError {
        ServerError(operationID: "createAPIKey", request: HTTPRequest(method: .post, scheme: nil, authority: nil, path: "/v1/tenants/t/api-keys"),
                    requestBody: nil, requestMetadata: .init(), operationInput: input, operationOutput: nil,
                    causeDescription: "cause", underlyingError: underlying, httpStatus: status, httpHeaderFields: [:], httpBody: nil)
    }

    struct Unexpected: Error {}

    @Test func failuresOfGeneratedOperationsKeepTheOneErrorShape() throws {
        struct Key: CodingKey { var stringValue: String; var intValue: Int?; init(stringValue: String) { self.stringValue = stringValue }
                                init(intValue: Int) { stringValue = "\(intValue)"; self.intValue = intValue } }
        let wrongScope = DecodingError.dataCorrupted(.init(codingPath: [Key(stringValue: "scopes"), Key(intValue: 0)], debugDescription: "Cannot initialize Scope"))
        let refused = APIError.from(Self.serverError(wrongScope, input: nil, status: .badRequest))
        #expect(refused.status == .badRequest)
        #expect(refused.code == "bad_request")
        #expect(refused.field == "scopes")
        #expect(refused.message.contains("createAPIKey in /openapi.yaml"))
        let missing = APIError.from(Self.serverError(DecodingError.keyNotFound(Key(stringValue: "scopes"), .init(codingPath: [], debugDescription: "")), input: nil, status: .internalServerError))
        #expect(missing.status == .badRequest && missing.field == "scopes" && missing.message.hasPrefix("scopes is required"), "\(missing.message)")
        let wrongType = DecodingError.typeMismatch(Int.self, .init(codingPath: [Key(stringValue: "storageQuotaBytes")], debugDescription: "Expected Int"))
        let typed = APIError.from(Self.serverError(wrongType, input: nil, status: .badRequest))
        #expect(typed.field == "storageQuotaBytes" && typed.message.hasPrefix("storageQuotaBytes must be a whole number"), "\(typed.message)")
        #expect(refused.message.hasPrefix("scopes[0] has a value the API does not take; it takes one of: streams:read, streams:write, playback:sign, recordings, webhooks, highlights;"), "\(refused.message)")
        // A nested field names its whole place in the message, and its top-level field.
        let rung = DecodingError.keyNotFound(Key(stringValue: "shortSide"), .init(codingPath: [Key(stringValue: "rungs"), Key(intValue: 0)], debugDescription: ""))
        let nested = APIError.from(Self.serverError(rung, input: nil, status: .badRequest))
        #expect(nested.field == "rungs" && nested.message.hasPrefix("rungs[0].shortSide is required"), "\(nested.message)")
        // A query item's enum names no key: the generated type does, when the request has the item.
        let current = DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "Cannot initialize CurrentPayload from invalid String value maybe"))
        var leases = Self.serverError(current, input: nil, status: .badRequest)
        leases.request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/v1/leases?limit=5&current=maybe")
        #expect(APIError.from(leases).field == "current")
        #expect(APIError.from(leases).message.hasPrefix("current has a value the API does not take (maybe); it takes one of: true, false;"), "\(APIError.from(leases).message)")
        leases.request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/v1/leases?limit=5")
        #expect(APIError.from(leases).field == nil && APIError.from(leases).message.hasPrefix("a parameter or the body has a value"))
        // A query item of the wrong type: the one item whose value is not of that type.
        let notANumber = DecodingError.typeMismatch(Int.self, .init(codingPath: [], debugDescription: "Failed to convert to the requested type."))
        var streams = Self.serverError(notANumber, input: nil, status: .badRequest)
        streams.request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/v1/tenants/shop/streams?state=live&limit=abc")
        #expect(APIError.from(streams).field == "limit" && APIError.from(streams).message.hasPrefix("limit must be a whole number"), "\(APIError.from(streams).message)")
        streams.request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/v1/tenants/shop/streams?limit=1.5&cursor=abc")
        #expect(APIError.from(streams).field == "limit", "a fraction is not a whole number; the cursor is no integer parameter")
        streams.request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/v1/tenants/shop/streams?limit=abc&limit=xyz&state=live")
        #expect(APIError.from(streams).field == "limit", "the one name, given twice")
        streams.request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/v1/tenants/shop/streams?state=live")
        #expect(APIError.from(streams).field == nil, "no integer item: none is named")
        // A shared parameter's type is named after its component (FeedOrder for order): the value finds it.
        let order = DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "Cannot initialize FeedOrder from invalid String value random"))
        var feed = Self.serverError(order, input: nil, status: .badRequest)
        feed.request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/v1/feed/shop?limit=5&order=random")
        #expect(APIError.from(feed).field == "order")
        #expect(APIError.from(feed).message.hasPrefix("order has a value the API does not take (random); it takes one of: viewers, started;"), "\(APIError.from(feed).message)")
        // Corrupted data that is not an enum's keeps the decoder's words.
        let date = DecodingError.dataCorrupted(.init(codingPath: [Key(stringValue: "expiresAt")], debugDescription: "Expected date string to be ISO8601-formatted."))
        #expect(APIError.from(Self.serverError(date, input: nil, status: .badRequest)).message.hasPrefix("expiresAt has a value the API does not take (Expected date string to be ISO8601-formatted.)"))
        feed.request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/v1/feed/shop?order=random&sort=random")
        #expect(APIError.from(feed).field == nil, "two items with that value: neither is named")
        // The handler's own refusal passes through unchanged.
        let own = APIError.from(Self.serverError(APIError.conflict("taken"), input: "input", status: .internalServerError))
        #expect(own.status == .conflict && own.message == "taken")
        // Anything else after the input was read is the API's failure: 500, without its text.
        let failed = APIError.from(Self.serverError(Unexpected(), input: "input", status: .internalServerError))
        #expect(failed.status == .internalServerError && failed.code == "internal")
    }

    @Test func aFailedGeneratedOperationIsLoggedWithoutItsRequestsToken() throws {
        var failed = Self.serverError(Unexpected(), input: "input", status: .internalServerError)
        failed.request.headerFields[.authorization] = "Bearer sck_abcdefghijkl_secretsecretsecret"
        let answer = APIError.from(failed)
        #expect("\(failed)".contains("secretsecretsecret"), "the runtime's own description carries the request's headers")
        let metadata = try #require(APIErrorMiddleware.logged(failed, answer: answer, method: "POST", path: "/v1/tenants/t/api-keys"))
        let logged = metadata.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        #expect(!logged.contains("secret") && !logged.contains("Bearer"), "\(logged)")
        #expect(metadata["operation"] == "createAPIKey" && metadata["error"] == "Unexpected()", "\(logged)")
        // The API's own answers are not failures of the API: nothing is logged.
        let unavailable = Self.serverError(APIError.unavailable, input: "input", status: .internalServerError)
        #expect(APIErrorMiddleware.logged(unavailable, answer: APIError.from(unavailable), method: "POST", path: "/") == nil)
        #expect(APIErrorMiddleware.logged(Unexpected(), answer: APIError.from(Unexpected()), method: "GET", path: "/")?["error"] == "Unexpected()")
    }

    /// What generated code writes for a header (apple/swift-openapi-generator#857) against what
    /// the handler set, which goes out.
    static let headerValues: [(written: String, sent: String)] = [
        ("http%3A%2F%2F127.0.0.1%3A8088%2Flive%2Fshop%2Flive%2Fthumbnail.jpg", "http://127.0.0.1:8088/live/shop/live/thumbnail.jpg"),
        ("public%2C%20max-age%3D5", "public, max-age=5"),
        ("max-age%3D2", "max-age=2"),
        ("%2A", "*"),
        ("*", "*"),
        // A % the handler set was escaped too, so it comes back as it was.
        ("https%3A%2F%2Fcdn.example%2Fa%2520b.jpg", "https://cdn.example/a%20b.jpg"),
        // Not a percent encoding: left as it is.
        ("100%", "100%"),
    ]

    @Test(arguments: headerValues) func generatedHeaderValuesGoOutAsTheHandlerSetThem(_ row: (written: String, sent: String)) throws {
        var fields = HTTPFields()
        fields[.location] = row.written
        fields[.contentType] = "application/json; charset=utf-8"
        fields[.init("X-Other")!] = "a%2Cb"
        let plain = PlainHeaderValues.plain(fields)
        #expect(plain[.location] == row.sent)
        #expect(plain[.contentType] == "application/json; charset=utf-8")
        #expect(plain[.init("X-Other")!] == "a%2Cb", "a header the document does not declare is left alone")
    }

    /// ``PlainHeaderValues/declared`` is every response header the document declares: one added
    /// there and not here would go out percent-encoded.
    @Test func everyResponseHeaderTheDocumentDeclaresIsDecoded() throws {
        var inHeaders = false, names: Set<String> = []
        for line in OpenAPIDocument.yaml.split(separator: "\n") {
            let indent = line.prefix { $0 == " " }.count
            if line.trimmingCharacters(in: .whitespaces) == "headers:" { inHeaders = true; continue }
            if inHeaders, indent == 12, let name = line.split(separator: ":").first { names.insert(name.trimmingCharacters(in: .whitespaces).lowercased()); continue }
            if indent < 12 { inHeaders = false }
        }
        #expect(names.count >= 3, "\(names)")
        #expect(names == Set(PlainHeaderValues.declared.map { $0.canonicalName }), "\(names)")
    }
}

/// The values an error lists for a value outside an enum, read off the API's own document by the
/// generated type's name or the field's: a golden table.
@Suite struct DocumentedEnumsTests {
    static let cases: [(type: String?, field: String?, allowed: [String]?)] = [
        ("Scope", "scopes", ["streams:read", "streams:write", "playback:sign", "recordings", "webhooks", "highlights"]),  // a component schema
        ("Visibility", "visibility", ["public", "private"]),
        ("FeedOrder", "order", ["viewers", "started"]),  // a shared parameter, feedOrder
        ("CurrentPayload", "current", ["true", "false"]),  // a parameter's inline enum
        ("PresetPayload", "preset", ["ultrafast", "superfast", "veryfast", "faster", "fast", "medium"]),  // a property's
        ("GopSecondsPayload", "gopSeconds", ["1", "2"]),
        ("RecordingPayload", "recording", ["on", "off"]),
        ("StatePayload", "state", nil),  // several properties named state, each its own list: none is named
        (nil, "order", ["viewers", "started"]),  // every order lists the same values
        ("Nope", "nope", nil),
        ("Scope|.*", "x", nil),  // not a name: nothing is looked up
    ]

    /// The query parameters a wrong type can be found among: `limit` and the like are integers;
    /// `state` and `cursor` are not.
    @Test func queryParametersOfAType() {
        let integers = OpenAPIDocument.queryParameters(ofType: "integer")
        #expect(integers.contains("limit") && !integers.contains("state") && !integers.contains("cursor"), "\(integers)")
        #expect(OpenAPIDocument.queryParameters(ofType: "integer|string").isEmpty)
    }

    @Test(arguments: cases.indices)
    func allowedValues(_ i: Int) {
        let c = Self.cases[i]
        #expect(OpenAPIDocument.allowedValues(type: c.type, field: c.field) == c.allowed, "\(c)")
    }
}
