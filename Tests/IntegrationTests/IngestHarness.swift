import Foundation
import Logging
import StorecastRuntime
import StorecastWire
import Synchronization
import ZeroMQ

/// `storecast-ingest` alone, against a fresh database, with a test worker on its work socket
/// that records everything ingest leases to it: the view a transcoder would have.
final class IngestHarness: @unchecked Sendable {
    let stack: StorecastStack
    let key: String
    let worker: RecordingWorker
    private(set) var ingest: ServiceProcess!

    var rtmpURL: String { stack.rtmpURL(key: key) }

    init(reconnectWindow: Double = 10, takeoverIdle: Double = 2) async throws {
        stack = try StorecastStack()
        key = try await stack.provisionStream(tenant: "shop", stream: "live")
        let work = "tcp://127.0.0.1:\(try TestEnvironment.freePort())"
        ingest = try ServiceProcess(name: "storecast-ingest", executable: try TestEnvironment.binary("storecast-ingest"), arguments: [
            "--database", stack.database, "--rtmp-host", "127.0.0.1", "--rtmp-port", "\(stack.rtmpPort)",
            "--work-endpoint", work, "--packager-endpoint", "tcp://127.0.0.1:1",
            "--metrics-endpoint", "tcp://127.0.0.1:\(try TestEnvironment.freePort())",
            "--reconnect-window", "\(reconnectWindow)", "--takeover-idle", "\(takeoverIdle)", "--zmq-keys", TestEnvironment.zmqKeys,
        ], logDirectory: stack.logDirectory)
        worker = try RecordingWorker(endpoint: work)
        let joined = await StorecastStack.eventually(timeout: .seconds(15)) { self.ingest.log.contains("transcoder worker joined") }
        guard joined else { throw TestEnvironment.Failure(description: "ingest never saw the test worker:\n\(ingest.log)") }
    }

    func stop() async -> Int32 {
        ingest.process.terminate()
        let status = await ingest.wait(timeout: 10)
        worker.stop()
        return status
    }
}

/// A DEALER that says READY, heartbeats every second and records what it is sent.
final class RecordingWorker: Sendable {
    final class Log: Sendable {
        let messages = Mutex<[WireMessage]>([])
        /// ZeroMQ messages that carried media (a unit or announce), batched or not.
        let mediaEnvelopes = Mutex(0)
        /// Heartbeats from ingest.
        let heartbeats = Mutex(0)
    }

    private final class Body: ZMQActorBody {
        typealias Command = Never
        let socket: ZMQSocket
        let log: Log
        var readableSockets: [ZMQSocket] { [socket] }
        init(socket: ZMQSocket, log: Log) throws {
            self.socket = socket
            self.log = log
            try beat(ready: true)
        }
        func beat(ready: Bool) throws {
            let status = WorkerStatus(workerID: "test-worker", capacity: 8, streams: [])
            try socket.send([WireCodec.encode(ready ? .workerReady(status) : .workerHeartbeat(status))])
        }
        func socketReadable(_ socket: ZMQSocket) throws {
            guard let frames = try socket.receive(dontWait: true), let body = frames.last else { return }
            let message = try WireCodec.decode(body)
            // A batch is its messages, in order (schemas/wire.md).
            let messages: [WireMessage] = if case .batch(let inner) = message { inner } else { [message] }
            log.heartbeats.withLock { $0 += messages.count(where: { if case .workerHeartbeat = $0 { true } else { false } }) }
            if messages.contains(where: { if case .accessUnit = $0 { true } else if case .streamAnnounce = $0 { true } else { false } }) {
                log.mediaEnvelopes.withLock { $0 += 1 }
            }
            log.messages.withLock { $0.append(contentsOf: messages.filter { if case .workerHeartbeat = $0 { false } else { true } }) }
        }
        func handle(_ command: Never) throws {}
        func tick(now: ContinuousClock.Instant) throws { try beat(ready: false) }
    }

    let log = Log()
    private let context: ZMQContext
    private let actor: ZMQActor<Never>

    init(endpoint: String) throws {
        let context = try ZMQContext(security: try ClusterKeys.security(directory: TestEnvironment.zmqKeys, role: .transcoder, logger: Logger(label: "test-worker")))
        let log = self.log
        self.context = context
        actor = try ZMQActor<Never>(name: "test-worker", tickInterval: .seconds(1), onError: { _ in }) {
            let s = try ZMQSocket(context: context, type: .dealer, maximumMessageSize: WireCodec.maximumMediaMessage)
            try s.setRoutingID(Array("test-worker".utf8))
            try s.connect(endpoint, server: "ingest")
            return try Body(socket: s, log: log)
        }
    }

    var messages: [WireMessage] { log.messages.withLock { $0 } }
    var mediaEnvelopes: Int { log.mediaEnvelopes.withLock { $0 } }
    var heartbeats: Int { log.heartbeats.withLock { $0 } }

    var announces: [StreamAnnounce] {
        messages.compactMap { if case .streamAnnounce(let a) = $0 { a } else { nil } }
    }

    func units(track kind: TrackKind) -> [AccessUnit] {
        var trackIDs: Set<UInt8> = []
        var out: [AccessUnit] = []
        for m in messages {
            switch m {
            case .streamAnnounce(let a): trackIDs = Set(a.tracks.filter { $0.kind == kind }.map(\.trackID))
            case .accessUnit(let u) where trackIDs.contains(u.trackID): out.append(u)
            default: break
            }
        }
        return out
    }

    var ended: Bool { messages.contains { if case .streamEnd = $0 { true } else { false } } }

    func stop() { actor.stop() }
}

/// Real RTMP publishers with a fixed, countable source: 320x240 at 30 fps, a keyframe every
/// 30 frames, AAC at 44.1 kHz.
enum Publisher: String, CaseIterable, Sendable, CustomStringConvertible {
    case ffmpeg
    case gstreamerRTMP2Sink = "gstreamer-rtmp2sink"
    case gstreamerRTMPSink = "gstreamer-rtmpsink (librtmp, as OBS)"

    var description: String { rawValue }

    func start(url: String, frames: Int, audio: Bool = true, video: Bool = true, logDirectory: URL) throws -> ServiceProcess {
        switch self {
        case .ffmpeg:
            var args = ["-hide_banner", "-loglevel", "error", "-re"]
            if video { args += ["-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30"] }
            if audio { args += ["-f", "lavfi", "-i", "sine=sample_rate=44100"] }
            if video { args += ["-frames:v", "\(frames)", "-c:v", "libx264", "-preset", "ultrafast", "-g", "30", "-keyint_min", "30", "-sc_threshold", "0"] } else { args += ["-t", "\(frames / 30)"] }
            if audio { args += ["-c:a", "aac", "-shortest"] }
            args += ["-f", "flv", url]
            return try ServiceProcess(name: "ffmpeg-\(UUID().uuidString.prefix(4))", executable: try TestEnvironment.which("ffmpeg"), arguments: args, logDirectory: logDirectory)
        case .gstreamerRTMP2Sink, .gstreamerRTMPSink:
            let sink = self == .gstreamerRTMP2Sink ? "rtmp2sink location=\(url)" : "rtmpsink location=\"\(url) live=1\""
            var pipeline = "flvmux name=m streamable=true ! \(sink)"
            if video {
                pipeline += " videotestsrc num-buffers=\(frames) is-live=true ! video/x-raw,width=320,height=240,framerate=30/1 ! x264enc tune=zerolatency speed-preset=ultrafast key-int-max=30 ! h264parse ! m."
            }
            if audio {
                pipeline += " audiotestsrc is-live=true num-buffers=\(frames * 44100 / 30 / 1024) samplesperbuffer=1024 ! audio/x-raw,rate=44100 ! audioconvert ! avenc_aac ! aacparse ! m."
            }
            return try ServiceProcess(name: "gst-\(UUID().uuidString.prefix(4))", executable: try TestEnvironment.which("gst-launch-1.0"), arguments: ["-q", "-e"] + pipeline.split(separator: " ").map(String.init), logDirectory: logDirectory)
        }
    }
}
