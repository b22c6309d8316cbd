import BinaryCoding

/// The Opus identification header (RFC 7845 section 5.1), which Enhanced RTMP sends as an Opus
/// sequence start. Opus always decodes at 48 kHz; the header gives channels and pre-skip. Pure.
public struct OpusHead: Equatable, Sendable {
    public static let decodingRate = 48_000

    public var channels: Int
    public var preSkip: Int
    /// The rate the encoder's input had (informational only).
    public var inputSampleRate: Int
    public var mappingFamily: UInt8
    public let bytes: [UInt8]

    public init(parsing bytes: [UInt8]) throws {
        var r = ByteReader(bytes)
        do {
            guard try r.read(8) == Array("OpusHead".utf8) else { throw AudioConfigError.malformed("not an OpusHead") }
            let version = try r.u8()
            guard version >> 4 == 0 else { throw AudioConfigError.malformed("OpusHead version \(version)") }
            channels = Int(try r.u8())
            guard channels > 0 else { throw AudioConfigError.malformed("OpusHead with 0 channels") }
            let skip = try r.read(2)
            preSkip = Int(skip[0]) | Int(skip[1]) << 8
            inputSampleRate = Int(try r.u32LE())
            _ = try r.read(2)  // output gain
            mappingFamily = try r.u8()
        } catch is ByteReaderError {
            throw AudioConfigError.truncated
        }
        self.bytes = bytes
    }
}
