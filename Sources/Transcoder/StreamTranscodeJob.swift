import Foundation
import Logging
import Metrics
import StorecastWire
import Synchronization

/// One stream's transcoding thread. libavcodec's blocking work happens here, never on Swift's
/// cooperative pool. Input is queued (bounded); output goes to `emit`.
final class StreamTranscodeJob: Sendable {
    private final class Inbox: Sendable {
        struct State {
            var messages: [WireMessage] = []
            /// Set when the queue overflowed: video is dropped until the next keyframe, since a
            /// P-frame without its references would only decode to garbage.
            var shedding = false
            var videoTracks: Set<UInt8> = []
        }
        let queue = Mutex(State())
        let available = DispatchSemaphore(value: 0)
        let stopped = Atomic<Bool>(false)
    }

    let streamID: Int64
    private let inbox = Inbox()
    private let maximumQueued: Int
    private let dropped = Counter(label: "storecast_transcoder_units_dropped_total")

    init(streamID: Int64, settings: TranscoderSettings, replayUntil: Int64? = nil, logger: Logger, emit: @escaping @Sendable (WireMessage) -> Void) {
        self.streamID = streamID
        self.maximumQueued = settings.maximumQueuedUnits
        let inbox = self.inbox
        let thread = Thread {
            let encoder = LadderEncoder(ladder: settings.ladder, settings: settings, replayUntil: replayUntil)
            var frames = CountReporter("storecast_transcoder_frames_encoded_total")
            var decodeErrors = CountReporter("storecast_transcoder_decode_errors_total")
            var slateFrames = CountReporter("storecast_transcoder_slate_frames_total")
            var thumbnails = CountReporter("storecast_transcoder_thumbnails_total")
            var thumbnailErrors = CountReporter("storecast_transcoder_thumbnail_errors_total")
            var rungsShed = CountReporter("storecast_transcoder_rungs_shed_total")
            var monitor = RealTimeMonitor()
            let lag = Gauge(label: "storecast_transcoder_lag_seconds", dimensions: [("stream", "\(streamID)")])
            let clock = ContinuousClock(), started = clock.now
            while true {
                inbox.available.wait()
                let batch = inbox.queue.withLock { q -> [WireMessage] in let b = q.messages; q.messages.removeAll(); return b }
                if batch.isEmpty, inbox.stopped.load(ordering: .acquiring) { return }
                for message in batch {
                    do {
                        for out in try encoder.handle(message) { emit(out) }
                    } catch {
                        logger.error("transcoding failed", metadata: ["stream": "\(streamID)", "error": "\(error)"])
                    }
                    switch message {
                    case .streamEnd, .release:
                        inbox.stopped.store(true, ordering: .releasing)
                        return
                    default:
                        break
                    }
                }
                frames.report(encoder.framesEncoded)
                decodeErrors.report(encoder.decodeErrors)
                slateFrames.report(encoder.slateFramesEncoded)
                thumbnails.report(encoder.thumbnailsTaken)
                thumbnailErrors.report(encoder.thumbnailErrors)
                // Behind real time: shed the top rung rather than queue without bound.
                if let ms = encoder.lastSourceVideoTime {
                    let wall = (clock.now - started) / .seconds(1)
                    if monitor.observe(wall: wall, streamTime: Double(ms) / 1000) {
                        let announce = encoder.shedTopRung()
                        for out in announce { emit(out) }
                        if !announce.isEmpty {
                            logger.warning("transcoding is behind real time; shedding the top rung", metadata: ["stream": "\(streamID)", "lag_seconds": "\(monitor.lag)"])
                        }
                    }
                    lag.record(monitor.lag)
                }
                rungsShed.report(encoder.rungsShed)
            }
        }
        thread.name = "transcode-\(streamID)"
        thread.start()
    }

    /// Queues input. Past the bound, non-keyframe video is shed rather than queued without limit.
    func submit(_ message: WireMessage) {
        let accepted = inbox.queue.withLock { q -> Bool in
            if case .streamAnnounce(let a) = message {
                q.videoTracks = Set(a.tracks.filter { $0.kind == .video }.map(\.trackID))
            }
            if case .accessUnit(let u) = message, q.videoTracks.contains(u.trackID) {
                if q.messages.count >= maximumQueued { q.shedding = true }
                if q.shedding {
                    guard u.isKeyframe, q.messages.count < maximumQueued else { return false }
                    q.shedding = false
                }
            }
            q.messages.append(message)
            return true
        }
        if accepted { inbox.available.signal() } else { dropped.increment() }
    }

    /// The stream moved to another worker: encode what is queued, flush the encoders, then stop.
    func release() {
        inbox.queue.withLock { $0.messages.append(.release(streamID: streamID)) }
        inbox.available.signal()
    }

    func stop() {
        inbox.stopped.store(true, ordering: .releasing)
        inbox.available.signal()
    }
}

/// Turns a running total kept by the encoder into increments of a swift-metrics counter.
struct CountReporter {
    private let counter: Counter
    private var reported = 0

    init(_ label: String) { counter = Counter(label: label) }

    mutating func report(_ total: Int) {
        guard total > reported else { return }
        counter.increment(by: total - reported)
        reported = total
    }
}
