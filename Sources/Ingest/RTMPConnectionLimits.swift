import RTMP

/// What one RTMP connection may cost before it is a publisher (issue 23: connections that sent
/// one byte stayed open for good, and two unauthenticated ones took a gigabyte). Defaults are no
/// looser than nginx-rtmp's and MediaMTX's; each is a `storecast-ingest` option, and each close
/// is logged and counted in `storecast_ingest_connections_closed_total{reason}`.
public struct RTMPConnectionLimits: Sendable, Equatable {
    /// The handshake (C0–C2) completes within this long of the connection (MediaMTX's read timeout: 10 s).
    public var handshakeTimeout: Duration = .seconds(10)
    /// `publish` is authorized within this long of the connection.
    public var publishTimeout: Duration = .seconds(30)
    /// Bytes a connection may send before it asks to publish (the handshake is 3,073; ffmpeg's,
    /// OBS's and Larix's commands up to publish are under 2 KiB).
    public var maximumBytesBeforePublish = 64 * 1024
    /// What the chunk decoder holds before publish (``ChunkDecoder/Limits/beforePublish``).
    public var decoderBeforePublish = ChunkDecoder.Limits.beforePublish
    /// Open connections from one IP address (0: no cap). Mobile carriers put many sellers
    /// behind one address, so this is generous; it stops one host from holding thousands.
    public var maximumConnectionsPerIP = 32

    public init() {}

    public enum CloseReason: String, Sendable {
        case handshakeTimeout = "handshake_timeout"
        case publishTimeout = "publish_timeout"
        case bytesBeforePublish = "bytes_before_publish"
        case perIPCap = "per_ip_cap"
    }
}
