@testable import Ingest
import NIOCore
import NIOEmbedded
import Testing

/// Read pacing on NIO's embedded loop: which reads reach the socket, and when.
@Suite struct PacedReadHandlerTests {
    /// Sits next to the head and counts the reads that get past the pacing handler.
    final class ReadCounter: ChannelOutboundHandler {
        typealias OutboundIn = NIOAny
        var reads = 0
        func read(context: ChannelHandlerContext) {
            reads += 1
            context.read()
        }
    }

    static let interval: Duration = .milliseconds(20)

    static func channel(on loop: EmbeddedEventLoop, pacer: ReadPacer?) throws -> (EmbeddedChannel, ReadCounter) {
        let counter = ReadCounter()
        let channel = EmbeddedChannel(loop: loop)
        try channel.pipeline.syncOperations.addHandlers(counter, PacedReadHandler(pacer: pacer))
        return (channel, counter)
    }

    @Test func readsPassStraightThroughUntilPacingStarts() throws {
        let loop = EmbeddedEventLoop()
        let (channel, counter) = try Self.channel(on: loop, pacer: ReadPacer(eventLoop: loop, interval: Self.interval))
        channel.read()
        channel.read()
        #expect(counter.reads == 2, "the handshake and commands are read as they come")
    }

    /// (request at ms, ticks run to ms, reads that reached the socket): a read asked for after
    /// pacing started waits for the tick `interval` after the first waiting read.
    static let table: [(askAt: [Int], advanceTo: Int, expected: Int)] = [
        ([0], 0, 0),
        ([0], 19, 0),
        ([0], 20, 1),
        ([0, 5], 20, 2),      // both waiting reads go on the same tick
        ([0, 25], 44, 1),     // the second asked after the first tick: waits for its own
        ([0, 25], 45, 2),
    ]

    @Test(arguments: table.indices)
    func aPacedReadWaitsForTheTick(_ row: Int) throws {
        let (askAt, advanceTo, expected) = Self.table[row]
        let loop = EmbeddedEventLoop()
        let (channel, counter) = try Self.channel(on: loop, pacer: ReadPacer(eventLoop: loop, interval: Self.interval))
        channel.pipeline.triggerUserOutboundEvent(ReadPacing.start, promise: nil)
        var now = 0
        for at in askAt where at <= advanceTo {
            loop.advanceTime(by: .milliseconds(Int64(at - now)))
            now = at
            channel.read()
        }
        loop.advanceTime(by: .milliseconds(Int64(advanceTo - now)))
        #expect(counter.reads == expected)
    }

    @Test func pacedConnectionsOfALoopReadOnOneTick() throws {
        let loop = EmbeddedEventLoop()
        let pacer = ReadPacer(eventLoop: loop, interval: Self.interval)
        let connections = try (0..<3).map { _ in try Self.channel(on: loop, pacer: pacer) }
        for (channel, _) in connections {
            channel.pipeline.triggerUserOutboundEvent(ReadPacing.start, promise: nil)
        }
        for (i, (channel, _)) in connections.enumerated() {
            loop.advanceTime(by: .milliseconds(Int64(i * 3)))
            channel.read()
        }
        #expect(connections.allSatisfy { $0.1.reads == 0 })
        loop.advanceTime(by: .milliseconds(20 - 9))  // 20 ms after the first read was asked for
        #expect(connections.map(\.1.reads) == [1, 1, 1])
    }

    @Test func aReadThatFilledItsBufferIsFollowedAtOnce() throws {
        let loop = EmbeddedEventLoop()
        let (channel, counter) = try Self.channel(on: loop, pacer: ReadPacer(eventLoop: loop, interval: Self.interval))
        channel.pipeline.triggerUserOutboundEvent(ReadPacing.start, promise: nil)
        var full = channel.allocator.buffer(capacity: 64)
        full.writeBytes([UInt8](repeating: 1, count: full.capacity))
        #expect(full.writableBytes == 0)
        try channel.writeInbound(full)
        channel.read()
        #expect(counter.reads == 1, "more is probably waiting: read on now")
        var partial = channel.allocator.buffer(capacity: 64)
        partial.writeBytes([1, 2, 3])
        try channel.writeInbound(partial)
        channel.read()
        #expect(counter.reads == 1, "caught up: wait for the tick")
        loop.advanceTime(by: .milliseconds(20))
        #expect(counter.reads == 2)
    }

    @Test func withoutAPacerOrOnAnotherLoopReadsAreNotHeld() throws {
        let loop = EmbeddedEventLoop()
        let (unpaced, unpacedCounter) = try Self.channel(on: loop, pacer: nil)
        unpaced.pipeline.triggerUserOutboundEvent(ReadPacing.start, promise: nil)
        unpaced.read()
        #expect(unpacedCounter.reads == 1)

        let other = EmbeddedEventLoop()
        let (elsewhere, elsewhereCounter) = try Self.channel(on: loop, pacer: ReadPacer(eventLoop: other, interval: Self.interval))
        elsewhere.pipeline.triggerUserOutboundEvent(ReadPacing.start, promise: nil)
        elsewhere.read()
        #expect(elsewhereCounter.reads == 1)
    }
}
