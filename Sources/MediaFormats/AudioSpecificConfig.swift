import BinaryCoding

/// ISO/IEC 14496-3 section 1.6.2.1: the AAC AudioSpecificConfig (FLV AAC sequence header).
public struct AudioSpecificConfig: Equatable, Sendable {
    public static let sampleRates = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350]

    public var objectType: UInt8
    public var sampleRate: Int
    public var channels: Int
    public let bytes: [UInt8]

    public init(parsing bytes: [UInt8]) throws {
        var r = BitReader(bytes)
        do {
            var type = UInt8(try r.bits(5))
            if type == 31 { type = UInt8(32 + (try r.bits(6))) }
            let index = Int(try r.bits(4))
            if index == 15 {
                sampleRate = Int(try r.bits(24))
            } else {
                guard index < Self.sampleRates.count else { throw AudioConfigError.invalidSampleRateIndex(index) }
                sampleRate = Self.sampleRates[index]
            }
            channels = Int(try r.bits(4))
            objectType = type
        } catch is ByteReaderError {
            throw AudioConfigError.truncated
        }
        self.bytes = bytes
    }

    /// RFC 6381: `mp4a.40.<object type>`.
    public var codecString: String { "mp4a.40.\(objectType)" }
}

/// Why an audio configuration (AudioSpecificConfig, OpusHead) was refused.
public enum AudioConfigError: Error, Equatable, Sendable {
    case truncated
    case invalidSampleRateIndex(Int)
    case malformed(String)
}
