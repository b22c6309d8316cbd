import CompressNIO
import NIOCore

/// Playlists in gzip for the players that accept it. A live LL-HLS player reloads each media
/// playlist it follows on every part (a blocking reload, five a second at 0.2 s parts), video and
/// audio: in `bench/feed_swipes.sh` the playlists were a third of what a 240p show cost a shopper
/// (about 276 of 800 kbit/s), for the show playing and again for the one preloaded. A playlist is
/// lines of tags and names that repeat; gzip makes it a quarter to a sixth. Browsers (hls.js's
/// requests), Safari's and AVPlayer's loaders, `curl --compressed` and URLSession send
/// `Accept-Encoding: gzip` and undo it themselves; a client that does not (``AcceptEncoding``) gets the playlist as it is. AWS Elemental's packagers offer
/// the same ("manifest compression: GZIP").
enum PlaylistEncoding {
    /// The bytes in gzip when that makes them smaller; nil when it does not, or if zlib fails
    /// (the playlist then goes as it is).
    static func gzip(_ bytes: [UInt8]) -> [UInt8]? {
        var input = ByteBuffer(bytes: bytes)
        guard let compressed = try? input.compress(with: .gzip(configuration: configuration)), compressed.readableBytes < bytes.count else { return nil }
        return Array(compressed.readableBytesView)
    }

    /// zlib's state for one playlist: a 4 KiB window (a playlist's lines repeat within a few
    /// lines: a segment's tags and its parts) and 16 KiB of hash state, against zlib's defaults of
    /// 32 KiB and 128 KiB, allocated for every rendering; level 6, zlib's default.
    static let configuration = ZlibConfiguration(windowSize: 12, compressionLevel: 6, memoryLevel: 5)
}
