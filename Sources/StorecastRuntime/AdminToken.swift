import Foundation

/// The operator's bearer token for the control API. There is no open mode: a missing token, a
/// short one or a known placeholder (compose's old `change-me`) stops the service at start
/// with what to do instead. Only `--insecure-dev` starts without one given, and then with a
/// random one made for that run (``checkOrMake(_:insecureDev:)``), never with none.
public enum AdminToken {
    public static let minimumLength = 24
    /// Values copied from examples, refused whatever their case.
    public static let placeholders: Set<String> = [
        "change-me", "changeme", "change_me", "replace-me", "secret", "password", "admin", "token", "test", "example",
        "storecast", "default", "letmein", "xxx", "todo",
    ]

    public struct Refused: Error, CustomStringConvertible {
        public let description: String
    }

    /// The token to use, or why not. `value`: the option, else `STORECAST_ADMIN_TOKEN`.
    public static func check(_ value: String?) throws -> String {
        let hint = "`storecast keys DIR` writes a fresh one into DIR/storecast.env"
        guard let value, !value.isEmpty else {
            throw Refused(description: "the control API needs an admin token: set --admin-token or STORECAST_ADMIN_TOKEN (\(hint))")
        }
        let trimmed = value.trimmingCharacters(in: .whitespacesAndNewlines)
        if placeholders.contains(trimmed.lowercased()) || trimmed.lowercased().hasPrefix("change") {
            throw Refused(description: "the admin token is a known placeholder (\"\(trimmed)\"): set a random one (\(hint))")
        }
        guard trimmed.count >= minimumLength else {
            throw Refused(description: "the admin token has \(trimmed.count) characters, fewer than \(minimumLength): set a random one (\(hint))")
        }
        return trimmed
    }

    /// `--insecure-dev`: the token given (held to the same rules), else a random one made for
    /// this run, which the caller says in its log. Without the flag, ``check(_:)``.
    public static func checkOrMake(_ value: String?, insecureDev: Bool) throws -> (token: String, made: Bool) {
        guard insecureDev, (value ?? "").trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else { return (try check(value), false) }
        var random = SystemRandomNumberGenerator()
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789")
        return ("dev_" + String((0..<32).map { _ in alphabet[Int(random.next(upperBound: UInt32(alphabet.count)))] }), true)
    }
}
