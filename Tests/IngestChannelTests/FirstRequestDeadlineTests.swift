@testable import ConnectionBudget
import Logging
import NIOCore
import NIOEmbedded
import Testing

/// The first request's header deadline (issue 23), on an embedded channel with virtual time:
/// a head that never ends is closed at the deadline; one that ends, in however many reads, lets
/// the connection live on.
@Suite struct FirstRequestDeadlineTests {
    static let tally = DeadlineTally(listener: "test", logger: Logger(label: "test"))

    /// Reads of the first request, and whether the connection is open 11 s in (deadline 10 s).
    static let cases: [(name: String, reads: [String], open: Bool)] = [
        ("nothing sent", [], false),
        ("a slowloris: headers that never end", ["GET / HTTP/1.1\r\n", "Host: x\r\n", "X-a: b\r\n"], false),
        ("a whole head", ["GET / HTTP/1.1\r\nHost: x\r\n\r\n"], true),
        ("the blank line split over two reads", ["GET / HTTP/1.1\r\nHost: x\r\n\r", "\n"], true),
        ("split over three reads", ["GET / HTTP/1.1\r\nHost: x\r", "\n\r", "\n"], true),
        ("one byte a read", "GET / HTTP/1.1\r\n\r\n".utf8.map { String(UnicodeScalar($0)) }, true),
        ("bare newlines are not a blank line", ["GET / HTTP/1.1\n\n"], false),
    ]

    @Test(arguments: cases.indices)
    func theFirstHeadMustEndInTime(_ i: Int) async throws {
        let c = Self.cases[i]
        let loop = EmbeddedEventLoop()
        let channel = EmbeddedChannel(loop: loop)
        try await channel.pipeline.addHandler(FirstRequestDeadline(deadline: .seconds(10), tally: Self.tally))
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).get()
        for read in c.reads {
            loop.advanceTime(by: .milliseconds(100))
            try channel.writeInbound(ByteBuffer(string: read))
            #expect(try channel.readInbound(as: ByteBuffer.self) == ByteBuffer(string: read), "\(c.name): every byte goes on")
        }
        loop.advanceTime(by: .seconds(11))
        #expect(channel.isActive == c.open, "\(c.name)")
        _ = try? await channel.finish()
    }
}
