/// The 4-byte header of an MPEG audio frame (ISO/IEC 11172-3 2.4.1.3 and 13818-3): enough to know
/// an MP3 stream's real sample rate and channel count. Pure.
public struct MPEGAudioHeader: Equatable, Sendable {
    public var sampleRate: Int
    public var channels: Int

    /// Sample rates by version (MPEG-1, MPEG-2, MPEG-2.5) and index.
    static let rates: [UInt8: [Int]] = [3: [44100, 48000, 32000], 2: [22050, 24000, 16000], 0: [11025, 12000, 8000]]

    /// nil when `bytes` does not start with a valid frame header.
    public init?(_ bytes: [UInt8]) {
        guard bytes.count >= 4, bytes[0] == 0xFF, bytes[1] & 0xE0 == 0xE0 else { return nil }
        let version = (bytes[1] >> 3) & 0x03
        let layer = (bytes[1] >> 1) & 0x03
        let rateIndex = Int((bytes[2] >> 2) & 0x03)
        guard layer != 0, rateIndex < 3, let table = Self.rates[version] else { return nil }
        sampleRate = table[rateIndex]
        channels = (bytes[3] >> 6) == 3 ? 1 : 2
    }
}
