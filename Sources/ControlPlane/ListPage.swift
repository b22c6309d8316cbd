/// What a list's items are called in its page (`streams`, `sessions`, `deliveries`).
protocol ListName: Sendable, Hashable {
    static var name: String { get }
}

enum StreamsList: ListName { static let name = "streams" }
enum SessionsList: ListName { static let name = "sessions" }
enum DeliveriesList: ListName { static let name = "deliveries" }

/// A page of a list: its items, and where the next page starts, written as null on the last
/// page, as the document requires (generated types would leave a nil out,
/// apple/swift-openapi-generator#934; schemas/openapi-generator-config.yaml's typeOverrides
/// make the document's pages these).
struct ListPage<Item: Codable & Hashable & Sendable, Name: ListName>: Codable, Hashable, Sendable {
    var items: [Item]
    /// The cursor of the next page; nil on the last.
    var next: String?

    /// A page of at most `limit` items: there may be more when it is full, after the last one's `cursor`.
    init(items: [Item], limit: Int, cursor: (Item) -> Int64) {
        self.items = items
        self.next = items.count == limit ? items.last.map { String(cursor($0)) } : nil
    }

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ s: String) { stringValue = s }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Key.self)
        items = try c.decode([Item].self, forKey: Key(Name.name))
        next = try c.decodeIfPresent(String.self, forKey: Key("next"))
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        try c.encode(items, forKey: Key(Name.name))
        try c.encode(next, forKey: Key("next"))
    }
}
