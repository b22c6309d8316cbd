import BinaryCoding
/// Server side of the RTMP handshake (RTMP specification 1.0, section 5.2), as a state machine
/// that consumes bytes and returns what to send.
///
/// A plain C1 (zero version bytes) gets the plain handshake: S1 carries our time and random bytes,
/// S2 echoes C1. A C1 with a valid digest (ffmpeg, Flash-era and hardware encoders) gets the
/// digest handshake when a ``DigestHandshake`` is given; an unverifiable one falls back to plain,
/// as nginx-rtmp and SRS do.
public struct HandshakeStateMachine: Sendable {
    public static let packetSize = 1536

    public enum State: Sendable, Equatable { case awaitingC0C1, awaitingC2, done }
    public enum Action: Sendable, Equatable {
        case send([UInt8])
        /// Handshake complete; the bytes after C2 belong to the chunk stream.
        case complete(leftover: [UInt8])
        case needMoreBytes
    }
    public struct Failure: Error, Equatable, Sendable, CustomStringConvertible {
        public let version: UInt8
        public var description: String { "unsupported RTMP version \(version) in C0 (expected 3)" }
    }

    public private(set) var state: State = .awaitingC0C1
    /// Which handshake the client got (for logs and tests).
    public private(set) var usedDigest = false
    private var buffer: [UInt8] = []
    private let serverRandom: [UInt8]
    private let serverTime: UInt32
    private let digest: DigestHandshake?

    public init(serverTime: UInt32 = 0, random: [UInt8]? = nil, digest: DigestHandshake? = nil) {
        self.serverTime = serverTime
        self.serverRandom = random ?? (0..<(Self.packetSize - 8)).map { _ in UInt8.random(in: 0...255) }
        self.digest = digest
    }

    public mutating func feed(_ bytes: [UInt8]) throws -> [Action] {
        buffer += bytes
        var actions: [Action] = []
        if state == .awaitingC0C1 {
            guard buffer.count >= 1 + Self.packetSize else { return [.needMoreBytes] }
            guard buffer[0] == 3 else { throw Failure(version: buffer[0]) }
            let c1 = Array(buffer[1...Self.packetSize])
            buffer.removeFirst(1 + Self.packetSize)
            var s0s1s2: [UInt8] = [3]
            if let digest, let (scheme, clientDigest) = digest.validate(c1: c1) {
                usedDigest = true
                s0s1s2 += digest.s1(scheme: scheme, time: serverTime, random: serverRandom)
                s0s1s2 += digest.s2(clientDigest: clientDigest, random: Array(serverRandom.reversed()) + serverTime.bigEndianBytes + [0, 0, 0, 0])
            } else {
                s0s1s2 += serverTime.bigEndianBytes + [0, 0, 0, 0] + serverRandom
                s0s1s2 += c1
            }
            actions.append(.send(s0s1s2))
            state = .awaitingC2
        }
        if state == .awaitingC2 {
            guard buffer.count >= Self.packetSize else { return actions + [.needMoreBytes] }
            let leftover = Array(buffer[Self.packetSize...])
            buffer = []
            state = .done
            actions.append(.complete(leftover: leftover))
        }
        return actions
    }
}
