@testable import Packager
import Testing

/// What the origin's wire-level hot path reads off an HTTP/1.1 connection (``HTTP1RequestHead``):
/// a plain GET it may answer, where any other request ends (so it can be handed on whole), and
/// what it must leave to the server's own parser. A golden table.
@Suite struct HTTP1RequestHeadTests {
    typealias Reading = HTTP1RequestHead.Reading
    static let part = "/live/shop/show/mwy5yauf/360p/part-12.3.m4s"
    static func plain(_ text: String, if etag: String? = nil, agent: String? = nil, forwarded: String? = nil, session: String? = nil, target: String = part) -> Reading {
        .plainGet(HTTP1RequestHead(target: target, length: text.utf8.count, ifNoneMatch: etag, userAgent: agent, forwardedFor: forwarded, playbackSessionID: session))
    }

    static let cases: [(name: String, bytes: String, reading: Reading)] = [
        ("wrk's request", "GET \(part) HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n", plain("GET \(part) HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n")),
        ("a browser's, with the fields the hot path reads",
         "GET \(part) HTTP/1.1\r\nhost: origin\r\nUser-Agent: Mozilla/5.0 (X11)\r\nIF-NONE-MATCH: \"abc\"\r\nAccept: */*\r\nX-Playback-Session-Id: 7F2A\r\n\r\n",
         plain("GET \(part) HTTP/1.1\r\nhost: origin\r\nUser-Agent: Mozilla/5.0 (X11)\r\nIF-NONE-MATCH: \"abc\"\r\nAccept: */*\r\nX-Playback-Session-Id: 7F2A\r\n\r\n",
               if: "\"abc\"", agent: "Mozilla/5.0 (X11)", session: "7F2A")),
        ("a field twice is joined as HTTPFields joins it; spaces and tabs around a value are not its own",
         "GET \(part) HTTP/1.1\r\nHost: o\r\nX-Forwarded-For: 10.0.0.1 \t\r\nX-Forwarded-For:\t203.0.113.7\r\nConnection: keep-alive\r\n\r\n",
         plain("GET \(part) HTTP/1.1\r\nHost: o\r\nX-Forwarded-For: 10.0.0.1 \t\r\nX-Forwarded-For:\t203.0.113.7\r\nConnection: keep-alive\r\n\r\n", forwarded: "10.0.0.1, 203.0.113.7")),
        ("a query is read as sent (MediaPath leaves it to the router)", "GET /a?b=c HTTP/1.1\r\nHost: o\r\n\r\n", plain("GET /a?b=c HTTP/1.1\r\nHost: o\r\n\r\n", target: "/a?b=c")),
        ("no blank line yet", "GET \(part) HTTP/1.1\r\nHost: o\r\n", .incomplete),
        ("half a request line", "GE", .incomplete),
        ("nothing", "", .incomplete),
        // Whole requests the hot path hands on, and how long each is.
        ("HEAD", "HEAD \(part) HTTP/1.1\r\nHost: o\r\n\r\n", .other(length: 70, bodyLength: 0)),
        ("HTTP/1.0", "GET / HTTP/1.0\r\n\r\n", .other(length: 18, bodyLength: 0)),
        ("Connection: close", "GET / HTTP/1.1\r\nHost: o\r\nConnection: keep-alive, Close\r\n\r\n", .other(length: 58, bodyLength: 0)),
        ("an upgrade to a WebSocket", "GET /ws HTTP/1.1\r\nHost: o\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n", .other(length: 70, bodyLength: 0)),
        ("no Host", "GET / HTTP/1.1\r\n\r\n", .other(length: 18, bodyLength: 0)),
        ("two Hosts", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", .other(length: 36, bodyLength: 0)),
        ("Expect", "GET / HTTP/1.1\r\nHost: o\r\nExpect: 100-continue\r\n\r\n", .other(length: 49, bodyLength: 0)),
        ("a POST with its body's length", "POST /x HTTP/1.1\r\nHost: o\r\nContent-Length: 12\r\n\r\n{\"a\":1}", .other(length: 49, bodyLength: 12)),
        ("the same length twice", "POST /x HTTP/1.1\r\nHost: o\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n", .other(length: 67, bodyLength: 3)),
        ("a GET with a body is not plain", "GET / HTTP/1.1\r\nHost: o\r\nContent-Length: 0\r\n\r\n", .other(length: 46, bodyLength: 0)),
        ("a value the router may read otherwise (obs-text)", "GET / HTTP/1.1\r\nHost: o\r\nUser-Agent: caf\u{e9}\r\n\r\n", .other(length: 46, bodyLength: 0)),
        // Bytes the hot path does not follow: the server's parser reads them from here on.
        ("a chunked body", "POST /x HTTP/1.1\r\nHost: o\r\nTransfer-Encoding: chunked\r\n\r\n", .unfollowable),
        ("two different lengths (request smuggling)", "POST /x HTTP/1.1\r\nHost: o\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", .unfollowable),
        ("a length that is not a number", "POST /x HTTP/1.1\r\nHost: o\r\nContent-Length: +3\r\n\r\n", .unfollowable),
        ("a bare LF ends a line", "GET / HTTP/1.1\nHost: o\r\n\r\n", .unfollowable),
        ("a bare CR in a value", "GET / HTTP/1.1\r\nHost: o\rX\r\n\r\n", .unfollowable),
        ("a folded line (obs-fold)", "GET / HTTP/1.1\r\nHost: o\r\nX-A: b\r\n c\r\n\r\n", .unfollowable),
        ("a space before the colon", "GET / HTTP/1.1\r\nHost : o\r\n\r\n", .unfollowable),
        ("a control character in a value", "GET / HTTP/1.1\r\nHost: o\u{1}\r\n\r\n", .unfollowable),
        ("an empty line before the request line", "\r\nGET / HTTP/1.1\r\nHost: o\r\n\r\n", .unfollowable),
        ("HTTP/2's preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", .unfollowable),
        ("two spaces in the request line", "GET  / HTTP/1.1\r\nHost: o\r\n\r\n", .unfollowable),
        ("a control character in the target", "GET /a\u{7f} HTTP/1.1\r\nHost: o\r\n\r\n", .unfollowable),
        ("a field without a colon", "GET / HTTP/1.1\r\nHost o\r\n\r\n", .unfollowable),
    ]

    @Test(arguments: cases.indices)
    func read(_ i: Int) {
        let c = Self.cases[i]
        #expect(HTTP1RequestHead.read(Array(c.bytes.utf8), maximumHeadBytes: 16 * 1024, maximumFields: 100) == c.reading, "\(c.name)")
    }

    /// The server parser's budgets are this reader's: over them, the parser refuses the request.
    @Test func aHeadOverTheBudgetIsTheServersToRefuse() {
        let fields = (0..<5).map { "X-\($0): v\r\n" }.joined()
        let head = Array("GET / HTTP/1.1\r\nHost: o\r\n\(fields)\r\n".utf8)
        let plain = HTTP1RequestHead.Reading.plainGet(HTTP1RequestHead(target: "/", length: head.count))
        #expect(HTTP1RequestHead.read(head, maximumHeadBytes: 16 * 1024, maximumFields: 6) == plain)
        #expect(HTTP1RequestHead.read(head, maximumHeadBytes: 16 * 1024, maximumFields: 5) == .unfollowable, "6 fields over a budget of 5")
        #expect(HTTP1RequestHead.read(head, maximumHeadBytes: head.count - 4, maximumFields: 100) == plain, "exactly at the byte budget")
        #expect(HTTP1RequestHead.read(head, maximumHeadBytes: head.count - 5, maximumFields: 100) == .unfollowable, "one byte over it")
        let trickle = Array("GET / HTTP/1.1\r\nX: \(String(repeating: "a", count: 100))".utf8)
        #expect(HTTP1RequestHead.read(trickle, maximumHeadBytes: 64, maximumFields: 100) == .unfollowable, "a head that never ends within the budget")
        #expect(HTTP1RequestHead.read(Array(trickle.prefix(60)), maximumHeadBytes: 64, maximumFields: 100) == .incomplete)
    }

    /// Pipelined requests: each reading covers exactly its own request, so the next starts where it ends.
    @Test func pipelinedRequestsAreReadOneByOne() {
        let first = "GET \(Self.part) HTTP/1.1\r\nHost: o\r\n\r\n", second = "POST /x HTTP/1.1\r\nHost: o\r\nContent-Length: 2\r\n\r\nok", third = "GET /y HTTP/1.1\r\nHost: o\r\n\r\n"
        var bytes = Array((first + second + third).utf8)[...]
        var lengths: [Int] = []
        while !bytes.isEmpty {
            switch HTTP1RequestHead.read(Array(bytes), maximumHeadBytes: 1024, maximumFields: 10) {
            case .plainGet(let head): lengths.append(head.length); bytes = bytes.dropFirst(head.length)
            case .other(let length, let body): lengths.append(length + body); bytes = bytes.dropFirst(length + body)
            default: Issue.record("\(String(decoding: bytes, as: UTF8.self))"); return
            }
        }
        #expect(lengths == [first, second, third].map { $0.utf8.count })
    }
}
