// libFuzzer entry for Storecast's parsers of untrusted bytes. Built by fuzz/run.sh together with
// the pure modules' sources (BinaryCoding, RTMP, MediaFormats, StorecastWire, and StorecastRuntime's
// ContainedPath, the one path builder, and WebhookRetryPolicy, whose Retry-After reader takes what
// a tenant's webhook receiver answers, and the packager's HTTP/1.1 request-head reader and its readers of
// media paths and file names) as one module, with
// -sanitize=fuzzer,address. The target is chosen by STORECAST_FUZZ_TARGET.
import Foundation

enum FuzzTarget: String, CaseIterable {
    case chunk, amf0, flv, avc, hevc, aac, wire, handshake, path, httphead, retryafter, mediapath, acceptencoding
}

let selected: FuzzTarget = {
    let name = ProcessInfo.processInfo.environment["STORECAST_FUZZ_TARGET"] ?? ""
    guard let t = FuzzTarget(rawValue: name) else {
        fatalError("set STORECAST_FUZZ_TARGET to one of \(FuzzTarget.allCases.map(\.rawValue))")
    }
    return t
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    switch selected {
    case .chunk:
        // The chunk layer and the command state machine on whatever the chunk layer yields.
        var decoder = ChunkDecoder()
        var session = ServerSessionStateMachine()
        decoder.feed(bytes)
        var n = 0
        while n < 10_000, let message = try? decoder.nextMessage() {
            for action in session.received(message) {
                if case .authorize = action { _ = session.publishAuthorized() }
            }
            n += 1
        }
    case .amf0:
        if let values = try? AMF0.decodeAll(bytes) {
            precondition((try? AMF0.decodeAll(AMF0.encode(values))) == values, "AMF0 round trip")
        }
    case .flv:
        _ = try? FLVTag.parseVideo(bytes)
        _ = try? FLVTag.parseAudio(bytes)
    case .avc:
        if let record = try? AVCDecoderConfigurationRecord(parsing: bytes) {
            _ = try? record.parsedSPS()
            _ = record.serialized()
            _ = record.codecString
        }
        _ = try? H264SequenceParameterSet(parsing: bytes)
        _ = try? NALUnit.splitLengthPrefixed(bytes)
        _ = NALUnit.splitAnnexB(bytes)
    case .hevc:
        if let record = try? HEVCDecoderConfigurationRecord(parsing: bytes) {
            _ = try? record.parsedSPS()
            _ = record.codecString
            _ = record.serialized()
        }
        _ = try? HEVCSequenceParameterSet(parsing: bytes)
    case .aac:
        _ = try? AudioSpecificConfig(parsing: bytes)
    case .wire:
        if let message = try? WireCodec.decode(bytes) {
            precondition((try? WireCodec.decode(WireCodec.encode(message))) == message, "wire round trip")
        }
        // What receivers use: a batch keeps its good entries; what it keeps must round-trip too.
        var skipped: [WireError] = []
        if let message = try? WireCodec.decode(bytes, skipping: &skipped) {
            precondition((try? WireCodec.decode(WireCodec.encode(message))) == message, "lenient wire round trip")
        }
    case .handshake:
        var h = HandshakeStateMachine(random: Array(repeating: 1, count: 1528))
        _ = try? h.feed(bytes)
    case .path:
        // Names from the wire as path components: either refused, or a path that stays under the
        // root (no empty, `.` or `..` component, nothing but the root before the names). Slugs
        // always pass both rules.
        let names = bytes.split(separator: 0x00, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
        let root = "/srv/storecast/dvr"
        if let path = try? ContainedPath.join(root, names) {
            precondition(path.hasPrefix(root + "/") || names.isEmpty, "path left its root: \(path)")
            let added = path.dropFirst(root.count).split(separator: "/", omittingEmptySubsequences: false).dropFirst()
            precondition(added.count == names.count, "a name became several components: \(path)")
            precondition(!added.contains { $0.isEmpty || $0 == "." || $0 == ".." }, "a path component escapes: \(path)")
        }
        for name in names where Slug.isValid(name) {
            precondition((try? ContainedPath.join(root, [name])) != nil, "a slug was refused as a path component: \(name)")
        }
        if names.count == 1, let key = try? ContainedPath.join(root, streamKey: names[0]) {
            precondition(key.hasPrefix(root + "/") && !key.contains("/../"), "stream key left its root: \(key)")
        }
    case .httphead:
        // The packager's wire-level hot path reads request heads off the network: whatever it
        // reads covers a whole head ending in its blank line, within the bytes and the budget;
        // and reading it again at any budget at least its length gives the same answer.
        let reading = HTTP1RequestHead.read(bytes, maximumHeadBytes: 1024, maximumFields: 20)
        let length: Int?
        switch reading {
        case .plainGet(let head): length = head.length
        case .other(let l, let body): length = l; precondition(body >= 0, "a negative body length")
        case .incomplete: length = nil; precondition(bytes.count < 1028, "incomplete past the budget")
        case .unfollowable: length = nil
        }
        if let length {
            precondition(length >= 4 && length <= bytes.count && length <= 1028, "a head outside the bytes: \(length) of \(bytes.count)")
            precondition(bytes[(length - 4)..<length].elementsEqual([13, 10, 13, 10]), "a head that does not end in a blank line")
            let firstBlankLine = (0...(length - 4)).first { bytes[$0] == 13 && bytes[$0 + 1] == 10 && bytes[$0 + 2] == 13 && bytes[$0 + 3] == 10 }
            precondition(firstBlankLine == length - 4, "a head that runs past its first blank line")
            precondition(HTTP1RequestHead.read(Array(bytes[..<length]), maximumHeadBytes: 1024, maximumFields: 20) == reading, "the head alone reads the same")
        }
    case .mediapath:
        // The origin's hot path reads every request's path off the network (MediaPath), then the
        // file name in it (PlaylistURIs.resource): the names read are exactly the path's, each one
        // component; and a file name is read only as the one name the packager gives that file.
        let text = String(decoding: bytes.prefix(512), as: UTF8.self)
        if let path = MediaPath(text) {
            let names = [path.tenant, path.stream, path.generation, path.rendition, path.file]
            precondition("/live/" + names.joined(separator: "/") == text, "a path read as other names: \(text)")
            precondition(!names.contains { $0.isEmpty || $0 == "." || $0 == ".." || $0.contains("/") || $0.contains("?") }, "a name that is not one plain component: \(text)")
        }
        if let resource = PlaylistURIs.resource(text) {
            let uris = PlaylistURIs.plain, made: String
            switch resource {
            case .initSegment(let v): made = uris.initSegment(v)
            case .segment(let n): made = uris.segment(n)
            case .part(let m, let i): made = uris.part(m, i)
            }
            precondition(made == text, "one file, two names: \(text) read as \(made)")
        }
        // And every name the packager writes is read back: numbers from the input, below 10^18.
        if bytes.count >= 16 {
            let numbers = stride(from: 0, to: 16, by: 8).map { at in bytes[at..<(at + 8)].reduce(UInt64(0)) { $0 << 8 | UInt64($1) } % 1_000_000_000_000_000_000 }
            let (m, i) = (Int(numbers[0]), Int(numbers[1]))
            let uris = PlaylistURIs.plain
            precondition(PlaylistURIs.resource(uris.segment(m)) == .segment(m), "\(uris.segment(m)) not read back")
            precondition(PlaylistURIs.resource(uris.part(m, i)) == .part(m, i), "\(uris.part(m, i)) not read back")
            precondition(PlaylistURIs.resource(uris.initSegment(m)) == .initSegment(m), "\(uris.initSegment(m)) not read back")
        }
    case .acceptencoding:
        // Any client's Accept-Encoding decides whether its playlists go in gzip (AcceptEncoding):
        // an item that names another coding changes nothing, gzip listed first is taken, gzip
        // refused first is not, and a weight read is one of RFC 9110's, 0 to 1.
        let text = String(decoding: bytes.prefix(512), as: UTF8.self)
        let accepts = AcceptEncoding.acceptsGzip(text)
        precondition(AcceptEncoding.acceptsGzip(text + ", identity") == accepts, "another coding after \(text) changed the answer")
        precondition(AcceptEncoding.acceptsGzip("gzip, " + text), "gzip first, then \(text), not taken")
        precondition(!AcceptEncoding.acceptsGzip("gzip;q=0, " + text), "gzip refused first, then \(text), taken")
        if let q = AcceptEncoding.qValue(Substring(text)) { precondition((0...1).contains(q), "a weight of \(q) from \(text)") }
        // Codings and the q parameter are case-insensitive: ASCII letters in upper case read the same.
        let upper = String(decoding: Array(text.utf8).map { (97...122).contains($0) ? $0 - 32 : $0 }, as: UTF8.self)
        precondition(AcceptEncoding.acceptsGzip(upper) == accepts, "\(text) and \(upper) read differently")
    case .retryafter:
        // A tenant's webhook receiver sets Retry-After: any value is a wait of zero or more, or
        // none; whole seconds are read as given.
        let text = String(decoding: bytes.prefix(256), as: UTF8.self)
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let wait = WebhookRetryPolicy.retryAfter(text, now: now)
        if let wait { precondition(wait >= .zero, "a negative wait for \(text)") }
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if !trimmed.isEmpty, trimmed.utf8.allSatisfy({ (48...57).contains($0) }), let seconds = Int(trimmed) {
            precondition(wait == .seconds(seconds), "\(trimmed) seconds read as \(String(describing: wait))")
        }
    }
    return 0
}
