import NIOCore
import RTMP
import StorecastWire

/// What a publishing connection needs from the rest of ingest: the seam that
/// ``RTMPConnectionHandler`` declares, implemented by ``PublishGate`` and faked in tests.
public protocol PublishSink: Sendable {
    /// Checks the key; `closer` closes this connection if a later publish takes it over.
    func authorize(_ request: PublishRequest, remote: String, owner: Int, closer: @escaping @Sendable (String) -> Void) async -> Result<PublishGrant, ServerSessionStateMachine.Rejection>
    /// Hands a wire message to the dispatcher (batched per round of `eventLoop`).
    func forward(_ message: WireMessage, streamID: Int64, on eventLoop: any EventLoop)
    /// Media arrived: the connection is alive and its timeline advanced.
    func media(_ grant: PublishGrant, owner: Int, timeline: StreamTimeline)
    /// Records codecs and size in the session row.
    func describe(_ grant: PublishGrant, width: Int?, height: Int?, video: String?, audio: String?)
    /// The frame rate the encoder declared in onMetaData, or as measured when it declared none.
    func frameRate(_ grant: PublishGrant, _ fps: Double)
    /// The source's bitrate over its last window of media (``SourceBitrateMeter``).
    func sourceBitrate(_ grant: PublishGrant, _ bitsPerSecond: Int)
    /// The publisher unpublished: the session ends.
    func unpublished(_ grant: PublishGrant, owner: Int)
    /// The connection dropped: the session waits for a reconnect, resuming after `timeline`.
    func dropped(_ grant: PublishGrant, owner: Int, timeline: StreamTimeline?)
}

extension PublishGate: PublishSink {}
