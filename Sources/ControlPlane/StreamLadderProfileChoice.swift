import StorecastRuntime

/// A stream's ladder profile as a merge patch: a profile of the tenant, or null (or absent)
/// for the tenant's default. (The generator leaves the document's oneOf of a slug and null out
/// of the body's type altogether.)
struct StreamLadderProfileChoice: Codable, Hashable, Sendable {
    var name: String?

    enum CodingKeys: String, CodingKey, CaseIterable { case name }

    init(from decoder: any Decoder) throws {
        // A typo ({"nmae": …}) would otherwise reset the stream to the tenant's default.
        try StrictJSONFields.check(decoder, CodingKeys.self, nullable: ["name"])
        name = try decoder.container(keyedBy: CodingKeys.self).decodeIfPresent(String.self, forKey: .name)
    }
}
