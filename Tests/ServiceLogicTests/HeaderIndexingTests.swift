import HTTPTypes
@testable import Packager
import Testing

/// Which answer fields HTTP/2's header compression may index (`markVaryingFieldsNotIndexed`): the ones
/// that vary per answer are marked `.avoid`, so a long-lived connection's HPACK table stays small.
@Suite struct HeaderIndexingTests {
    static let table: [(name: HTTPField.Name, value: String, indexed: Bool)] = [
        (.eTag, "\"360p-1-abc-part-6.3.m4s\"", false),
        (.contentLength, "8973", false),
        (.lastModified, "Thu, 26 Nov 2026 19:06:49 GMT", false),
        (.age, "3", false),
        (.contentType, "video/iso.segment", true),
        (.cacheControl, "max-age=31536000, immutable", true),
        (.accessControlAllowOrigin, "*", true),
    ]

    @Test func fieldsThatVaryPerAnswerAreNotIndexed() {
        var headers = HTTPFields()
        for row in Self.table { headers.append(HTTPField(name: row.name, value: row.value)) }
        headers.markVaryingFieldsNotIndexed()
        for row in Self.table {
            let field = headers[fields: row.name].first
            #expect(field?.value == row.value, "\(row.name): the value is kept")
            #expect((field?.indexingStrategy == .automatic) == row.indexed, "\(row.name): \(String(describing: field?.indexingStrategy))")
        }
        #expect(headers.count == Self.table.count)
    }
}
