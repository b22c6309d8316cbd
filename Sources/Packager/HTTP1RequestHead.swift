/// An HTTP/1.1 request head as the origin's wire-level hot path reads it (issue 18,
/// ``HTTP1MediaFastPath``): only as much of RFC 9112 as it needs to answer a plain GET of media
/// itself, and to find where any other request ends so that it can hand the request, whole, to
/// the server's own parser (NIO's llhttp) and read the next one.
///
/// It is strict on purpose. Anything it does not follow exactly (a bare CR or LF, a folded line,
/// a control character, a chunked body, a head over the budget, an odd version) is
/// ``Reading/unfollowable``: the connection's input goes to the server's parser from there on,
/// and that parser answers what is wrong, as it did before this reader existed. So this reader
/// never refuses a request itself and never answers one the server's parser would refuse.
///
/// Pure Swift on bytes (no imports): tested with golden tables and fuzzed (`fuzz/run.sh httphead`).
struct HTTP1RequestHead: Equatable, Sendable {
    /// What the bytes at the front of a connection's input hold.
    enum Reading: Equatable, Sendable {
        /// No blank line yet, within the budget: wait for more bytes.
        case incomplete
        /// A GET over HTTP/1.1 with one Host, no body, no `Connection: close` or upgrade and no
        /// `Expect`: the hot path may answer it (``HTTP1RequestHead/length`` bytes).
        case plainGet(HTTP1RequestHead)
        /// A whole request head the hot path leaves to the server: `length` bytes of head, then
        /// `bodyLength` bytes of body (its Content-Length).
        case other(length: Int, bodyLength: Int)
        /// Bytes this reader does not follow; the server's parser takes the input from here on.
        case unfollowable
    }

    /// The request target, as sent.
    var target: String
    /// Bytes of the head, up to and including its blank line.
    var length: Int
    /// Fields the hot path reads; a field sent more than once is its values joined with ", ",
    /// as swift-http-types' `HTTPFields` gives it to the router.
    var ifNoneMatch: String? = nil
    var userAgent: String? = nil
    var forwardedFor: String? = nil
    var playbackSessionID: String? = nil

    /// Reads the head at the front of `bytes`. `maximumHeadBytes` and `maximumFields` are the
    /// server parser's own limits: a head over them is theirs to refuse.
    static func read(_ bytes: UnsafeRawBufferPointer, maximumHeadBytes: Int, maximumFields: Int) -> Reading {
        guard let end = blankLine(bytes, within: maximumHeadBytes) else {
            return bytes.count >= maximumHeadBytes + 4 ? .unfollowable : .incomplete
        }
        var lines = Lines(bytes: bytes, end: end)
        guard let requestLine = lines.next(), let request = RequestLine(bytes, requestLine) else { return .unfollowable }
        var fields = Fields()
        var count = 0
        while let line = lines.next() {
            guard line.lowerBound < line.upperBound else { return .unfollowable }  // only the blank line ends a head
            count += 1
            guard count <= maximumFields, fields.add(bytes, line) else { return .unfollowable }
        }
        guard lines.clean, !fields.chunked else { return .unfollowable }
        let length = end + 4
        let plain = request.isGet && request.isHTTP11 && fields.hosts == 1 && fields.contentLength == nil && !fields.closesOrUpgrades
            && !fields.expects && !fields.upgrades && !fields.nonASCII
        guard plain else { return .other(length: length, bodyLength: fields.contentLength ?? 0) }
        let target = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[request.target]), as: UTF8.self)
        return .plainGet(HTTP1RequestHead(target: target, length: length, ifNoneMatch: fields.ifNoneMatch, userAgent: fields.userAgent,
                                          forwardedFor: fields.forwardedFor, playbackSessionID: fields.playbackSessionID))
    }

    /// The offset of the first `\r\n\r\n` within the first `limit + 4` bytes.
    private static func blankLine(_ bytes: UnsafeRawBufferPointer, within limit: Int) -> Int? {
        let last = min(bytes.count, limit + 4) - 4
        guard last >= 0 else { return nil }
        var i = 0
        while i <= last {
            if bytes[i + 3] != 10 { i += bytes[i + 3] == 13 ? 1 : 4; continue }  // the LF at i+3 ends it; else skip ahead
            if bytes[i] == 13, bytes[i + 1] == 10, bytes[i + 2] == 13 { return i }
            i += 1
        }
        return nil
    }

    /// The head's lines, split at CRLF; a CR or LF anywhere else makes it not ``clean``.
    private struct Lines {
        let bytes: UnsafeRawBufferPointer
        let end: Int
        var at = 0
        var clean = true

        mutating func next() -> Range<Int>? {
            guard at < end else { return nil }
            var i = at
            while i < end, bytes[i] != 13, bytes[i] != 10 { i += 1 }
            if i < end, !(bytes[i] == 13 && bytes[i + 1] == 10) { clean = false }  // a bare CR or LF
            defer { at = i + 2 }
            return at..<i
        }
    }

    private struct RequestLine {
        let isGet: Bool
        let isHTTP11: Bool
        let target: Range<Int>

        /// `METHOD SP TARGET SP HTTP/1.x`, a token method and a target of visible characters.
        init?(_ bytes: UnsafeRawBufferPointer, _ line: Range<Int>) {
            guard let space = (line.lowerBound..<line.upperBound).first(where: { bytes[$0] == 32 }), space > line.lowerBound,
                  (line.lowerBound..<space).allSatisfy({ HTTP1RequestHead.isToken(bytes[$0]) }) else { return nil }
            let targetStart = space + 1
            guard let second = (targetStart..<line.upperBound).first(where: { bytes[$0] == 32 }), second > targetStart,
                  (targetStart..<second).allSatisfy({ (0x21...0x7E).contains(bytes[$0]) }) else { return nil }
            let version = UnsafeRawBufferPointer(rebasing: bytes[(second + 1)..<line.upperBound])
            guard version.count == 8, version.starts(with: "HTTP/1.".utf8), version[7] == UInt8(ascii: "1") || version[7] == UInt8(ascii: "0") else { return nil }
            isGet = space - line.lowerBound == 3 && bytes[line.lowerBound] == UInt8(ascii: "G") && bytes[line.lowerBound + 1] == UInt8(ascii: "E") && bytes[line.lowerBound + 2] == UInt8(ascii: "T")
            isHTTP11 = version[7] == UInt8(ascii: "1")
            target = targetStart..<second
        }
    }

    /// What the fields say, as far as the hot path cares.
    private struct Fields {
        var hosts = 0
        var contentLength: Int?
        var chunked = false
        var closesOrUpgrades = false
        var expects = false
        var upgrades = false
        /// A field the hot path reads has a byte over 0x7F (the router may read it otherwise).
        var nonASCII = false
        var ifNoneMatch: String?
        var userAgent: String?
        var forwardedFor: String?
        var playbackSessionID: String?

        /// `NAME ":" OWS VALUE OWS` with a token name and a value of visible characters, spaces,
        /// tabs and obs-text; false for anything else, and for a Content-Length that is not one
        /// number (a second, different one included).
        mutating func add(_ bytes: UnsafeRawBufferPointer, _ line: Range<Int>) -> Bool {
            guard let colon = (line.lowerBound..<line.upperBound).first(where: { bytes[$0] == UInt8(ascii: ":") }), colon > line.lowerBound,
                  (line.lowerBound..<colon).allSatisfy({ HTTP1RequestHead.isToken(bytes[$0]) }) else { return false }
            var start = colon + 1, end = line.upperBound
            while start < end, bytes[start] == 32 || bytes[start] == 9 { start += 1 }
            while end > start, bytes[end - 1] == 32 || bytes[end - 1] == 9 { end -= 1 }
            var ascii = true
            for i in start..<end {
                let byte = bytes[i]
                if byte < 0x20 && byte != 9 || byte == 0x7F { return false }
                if byte > 0x7F { ascii = false }
            }
            let name = UnsafeRawBufferPointer(rebasing: bytes[line.lowerBound..<colon])
            let value = UnsafeRawBufferPointer(rebasing: bytes[start..<end])
            func named(_ lowercase: String) -> Bool {
                name.count == lowercase.utf8.count && zip(name, lowercase.utf8).allSatisfy { $0 | 0x20 == $1 || $0 == $1 }
            }
            func joined(_ old: String?) -> String? {
                if !ascii { nonASCII = true }
                let text = String(decoding: value, as: UTF8.self)
                return old.map { $0 + ", " + text } ?? text
            }
            switch name.count {
            case 4 where named("host"): hosts += 1
            case 14 where named("content-length"):
                guard (1...18).contains(value.count), value.allSatisfy({ (48...57).contains($0) }) else { return false }
                let n = value.reduce(0) { $0 * 10 + Int($1 - 48) }
                if let contentLength, contentLength != n { return false }
                contentLength = n
            case 17 where named("transfer-encoding"): chunked = true  // any transfer coding: the server's parser follows it
            case 10 where named("connection"):
                for token in value.split(separator: UInt8(ascii: ",")) {
                    let words = String(decoding: token, as: UTF8.self).lowercased().split(whereSeparator: { $0 == " " || $0 == "\t" })
                    if words == ["close"] || words == ["upgrade"] { closesOrUpgrades = true }
                }
            case 6 where named("expect"): expects = true
            case 7 where named("upgrade"): upgrades = true
            case 13 where named("if-none-match"): ifNoneMatch = joined(ifNoneMatch)
            case 10 where named("user-agent"): userAgent = joined(userAgent)
            case 15 where named("x-forwarded-for"): forwardedFor = joined(forwardedFor)
            case 21 where named("x-playback-session-id"): playbackSessionID = joined(playbackSessionID)
            default: break
            }
            return true
        }
    }

    /// RFC 9110 5.6.2: `tchar`.
    static func isToken(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "*"),
             UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"): true
        default: false
        }
    }
}

extension HTTP1RequestHead {
    /// ``read(_:maximumHeadBytes:maximumFields:)`` of an array (tests, the fuzzer).
    static func read(_ bytes: [UInt8], maximumHeadBytes: Int, maximumFields: Int) -> Reading {
        bytes.withUnsafeBytes { read($0, maximumHeadBytes: maximumHeadBytes, maximumFields: maximumFields) }
    }
}
