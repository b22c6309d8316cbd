@testable import StorecastWire
import Testing

/// Names that become paths and URLs are checked where they are decoded (issue 23: a tenant
/// called `../../../../tmp` made the packager write and delete outside its DVR root).
@Suite struct SlugTests {
    static let table: [(String, Bool)] = [
        ("acme", true), ("720p", true), ("audio", true), ("source", true), ("a", true), ("0-shop-9", true),
        (String(repeating: "a", count: 63), true), (String(repeating: "a", count: 64), false),
        ("", false), ("-acme", false), ("Acme", false), ("ac me", false), ("acme/show", false), ("..", false),
        ("../../../../tmp", false), (".hidden", false), ("a.b", false), ("acme\u{0}", false), ("é", false), ("acme_shop", false),
    ]

    @Test(arguments: table) func rule(_ name: String, _ valid: Bool) {
        #expect(Slug.isValid(name) == valid, "\(name.debugDescription)")
    }

    static let hostile: [(String, WireMessage)] = [
        ("tenant", .streamAnnounce(StreamAnnounce(streamID: 1, sessionID: 1, tenant: "../../../../tmp", streamName: "show", discontinuity: false, tracks: []))),
        ("stream", .streamAnnounce(StreamAnnounce(streamID: 1, sessionID: 1, tenant: "acme", streamName: "..", discontinuity: false, tracks: []))),
        ("rendition", .streamAnnounce(StreamAnnounce(streamID: 1, sessionID: 1, tenant: "acme", streamName: "show", discontinuity: false, tracks: [
            TrackConfig(trackID: 1, kind: .video, codec: "h264", name: "../720p", timescale: 1000, config: [])]))),
        ("rung", .assign(Assignment(streamID: 1, packagerEndpoint: "tcp://127.0.0.1:1", profile: TranscodeProfile(
            name: "mobile", rungs: [.init(name: "a/b", shortSide: 360, bitrate: 1)], preset: "veryfast", gopSeconds: 2, lowLatency: true)))),
    ]

    /// The encoder writes any string (it is the sender's own); the decoder refuses a bad name with
    /// a clear error, in a batch too, where only that entry is left out.
    @Test(arguments: hostile) func refusedWhereDecoded(_ what: String, _ message: WireMessage) throws {
        let bytes = WireCodec.encode(message)
        #expect(throws: WireError(reason: .invalidField("\(what) name is not a slug (\(Slug.rule))"))) { try WireCodec.decode(bytes) }
        let good = WireMessage.streamEnd(StreamEnd(streamID: 1, reason: "x"))
        var skipped: [WireError] = []
        let batch = try WireCodec.decode(WireCodec.encode(.batch([message, good])), skipping: &skipped)
        #expect(batch == .batch([good]))
        #expect(skipped.count == 1)
    }
}
