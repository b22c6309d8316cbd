import Foundation

extension OpenAPIDocument {
    /// The values the document allows where a request was refused for a value outside an enum,
    /// so the error can list them (issue 16). Found by the generated type the decoder names (a
    /// component schema, `Scope`; a shared parameter, `FeedOrder` for `feedOrder`), else by the
    /// field or parameter's own inline enum (`preset`, `current`). Nil when the document has no
    /// such list, or different lists under that name: then the error cannot say which applies.
    ///
    /// Read off the document's layout (components at four spaces, enums in flow style); the
    /// contract test checks the document with a real YAML parser, and a golden table checks this
    /// against it.
    static func allowedValues(type: String?, field: String?, in text: String = yaml) -> [String]? {
        func lists(_ pattern: String) -> Set<[String]> {
            guard let regex = try? Regex(pattern) else { return [] }
            return Set(text.matches(of: regex).compactMap { match in
                (match.output.count > 1 ? match.output[1].substring : nil).map(values)
            })
        }
        func one(_ found: Set<[String]>) -> [String]? { found.count == 1 ? found.first : nil }
        if let type, isName(type) {
            let parameter = type.prefix(1).lowercased() + type.dropFirst()
            let found = lists(#"(?m)^    \#(type):\n      type: \w+\n      enum: \[([^\]\n]*)\]"#)
                .union(lists(#"(?m)^    \#(parameter): \{name: [\w-]+, in: \w+, schema: \{[^{}\n]*enum: \[([^\]\n]*)\]"#))
            if let list = one(found) { return list }
        }
        guard let field, isName(field) else { return nil }
        return one(lists(#"[\s{,]\#(field): \{[^{}\n]*enum: \[([^\]\n]*)\]"#)
            .union(lists(#"\{name: \#(field), in: \w+, schema: \{[^{}\n]*enum: \[([^\]\n]*)\]"#)))
    }

    /// The query parameters the document declares of a JSON type (`integer`, `number`,
    /// `boolean`), by name, in any operation: where a query item of the wrong type was refused,
    /// only these can be the one.
    static func queryParameters(ofType type: String, in text: String = yaml) -> Set<String> {
        guard isName(type), let regex = try? Regex(#"\{name: ([\w-]+), in: query, schema: \{type: \#(type)\b"#) else { return [] }
        return Set(text.matches(of: regex).compactMap { $0.output[1].substring.map(String.init) })
    }

    /// `a, "b:c", 1` as its values.
    private static func values(_ list: Substring) -> [String] {
        list.split(separator: ",").map { item in
            let trimmed = item.trimmingCharacters(in: .whitespaces)
            return trimmed.count >= 2 && trimmed.hasPrefix("\"") && trimmed.hasSuffix("\"") ? String(trimmed.dropFirst().dropLast()) : trimmed
        }
    }

    /// A name that is safe inside a pattern: letters, digits and `_`.
    private static func isName(_ text: String) -> Bool {
        !text.isEmpty && text.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }
    }
}
