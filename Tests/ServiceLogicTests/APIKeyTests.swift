import StorecastRuntime
import Testing

/// Tenants' API keys: their shape, what parses, and the hash that is kept.
@Suite struct APIKeyTests {
    @Test func aNewKeyParsesBackAndMatchesOnlyItsHash() throws {
        let key = APIKey.generate()
        #expect(key.text.hasPrefix("sck_") && key.text.count == 4 + 12 + 1 + 40)
        #expect(APIKey.parse(key.text) == key)
        #expect(APIKey.matches(secret: key.secret, storedHash: key.secretHash))
        #expect(!APIKey.matches(secret: key.secret + "x", storedHash: key.secretHash))
        #expect(APIKey.generate() != key, "keys are random")
    }

    @Test func theHashIsSHA256OfTheSecret() {
        // sha256("abc"), FIPS 180-2's example.
        #expect(APIKey.matches(secret: "abc", storedHash: "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"))
    }

    static let notKeys = [
        "", "sck_", "sck_abc_def", "Bearer sck_aaaaaaaaaaaa_" + String(repeating: "b", count: 40),
        "sk_aaaaaaaaaaaa_" + String(repeating: "b", count: 40),             // a stream key's prefix
        "sck_AAAAAAAAAAAA_" + String(repeating: "b", count: 40),            // capitals
        "sck_aaaaaaaaaaa_" + String(repeating: "b", count: 40),             // id one short
        "sck_aaaaaaaaaaaa_" + String(repeating: "b", count: 41),            // secret one long
        "sck_aaaaaaaaaaaa_" + String(repeating: "b", count: 39) + "/",      // not the alphabet
        "sck_aaaaaaaaaaaa_bbbb_" + String(repeating: "b", count: 35),       // a fourth part
    ]

    @Test(arguments: notKeys)
    func malformedKeysDoNotParse(_ text: String) {
        #expect(APIKey.parse(text) == nil)
    }
}
