import HTTPTypes

extension HTTPFields {
    /// Marks the fields whose value differs on nearly every answer (an ETag per object, a length
    /// per body) not to be indexed by HTTP/2's header compression. Indexed, each answer would add
    /// entries to the connection's HPACK table until it holds what the client allows (64 KiB in
    /// Chromium), and the encoder searches that table for every field of every answer: measured
    /// on two hls.js players, 82 % of a core for the packager's debug build against 26 % with
    /// these fields unindexed. The fields that repeat (types, CORS, caching) are indexed once and
    /// then cost a byte each.
    /// One pass over the answer's fields, changing only those present (it runs on every answer).
    mutating func markVaryingFieldsNotIndexed() {
        for i in indices where Self.varyingPerAnswer.contains(self[i].name) { self[i].indexingStrategy = .avoid }
    }

    private static let varyingPerAnswer: [HTTPField.Name] = [.eTag, .contentLength, .lastModified, .age]
}
