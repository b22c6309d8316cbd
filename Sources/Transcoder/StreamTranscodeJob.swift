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
            var messages: [QueuedMessage] = []
            /// Set when the queue overflowed: video is dropped until the next keyframe, since a
            /// P-frame without its references would only decode to garbage.
            var shedding = false
            var videoTracks: Set<UInt8> = []
        }
        let queue = Mutex(State())
        let available = DispatchSemaphore(value: 0)
        let stopped = Atomic<Bool>(false)
        /// Arrival times are seconds since this instant.
        let epoch = ContinuousClock.now

        func seconds(at instant: ContinuousClock.Instant = .now) -> Double { (instant - epoch) / .seconds(1) }

        /// Returns taken messages to the front of the queue, before anything that came since.
        func putBack(_ messages: [QueuedMessage]) {
            guard !messages.isEmpty else { return }
            queue.withLock { $0.messages.insert(contentsOf: messages, at: 0) }
        }

        func takeAll() -> [QueuedMessage] {
            queue.withLock { q in
                let b = q.messages
                q.messages.removeAll(keepingCapacity: true)
                return b
            }
        }
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
            var thinned = CountReporter("storecast_transcoder_frames_thinned_total")
            let catchUps = Counter(label: "storecast_transcoder_catchup_skips_total")
            let skippedUnits = Counter(label: "storecast_transcoder_units_skipped_total")
            let frameSteps = Counter(label: "storecast_transcoder_frame_step_changes_total")
            let lag = Gauge(label: "storecast_transcoder_lag_seconds", dimensions: [("stream", "\(streamID)")])
            let frameStep = Gauge(label: "storecast_transcoder_frame_step", dimensions: [("stream", "\(streamID)")])
            var policy = LadderRealTimePolicy()
            var videoTracks: Set<UInt8> = []
            frameStep.record(1)
            while true {
                inbox.available.wait()
                var batch = inbox.takeAll()
                if batch.isEmpty, inbox.stopped.load(ordering: .acquiring) { return }
                var next = 0
                while next < batch.count {
                    let queued = batch[next]
                    next += 1
                    do {
                        for out in try encoder.handle(queued.message) { emit(out) }
                    } catch {
                        logger.error("transcoding failed", metadata: ["stream": "\(streamID)", "error": "\(error)"])
                    }
                    switch queued.message {
                    case .streamEnd, .release:
                        inbox.stopped.store(true, ordering: .releasing)
                        return
                    case .streamAnnounce(let a):
                        videoTracks = Set(a.tracks.filter { $0.kind == .video }.map(\.trackID))
                    case .accessUnit(let u) where videoTracks.contains(u.trackID):
                        // Behind real time is work queued here: arrival to encode done.
                        let done = inbox.seconds()
                        var actions = policy.encoded(arrived: queued.arrived, done: done)
                        lag.record(policy.lag)
                        while let action = actions.popLast() {
                            switch action {
                            case .skipToNewestKeyframe:
                                let taken = inbox.takeAll()
                                let (kept, count) = CatchUpSkip.apply(to: Array(batch[next...]) + taken, videoTracks: videoTracks)
                                if count > 0 {
                                    batch = kept
                                    next = 0
                                    catchUps.increment()
                                    skippedUnits.increment(by: count)
                                    logger.warning("transcoding is behind real time; skipping queued video to the newest keyframe (every rendition continues)",
                                                   metadata: ["stream": "\(streamID)", "lag_seconds": "\(policy.lag)", "units_skipped": "\(count)"])
                                } else {
                                    // No keyframe queued (a long GOP): the inbox keeps its order
                                    // and its bound; the attempt still counts toward thinning,
                                    // the one remedy left.
                                    inbox.putBack(taken)
                                }
                                actions += policy.skipped(at: done)
                            case .frameStep(let n):
                                let thinner = n > encoder.frameStep
                                encoder.frameStep = n
                                frameStep.record(Double(n))
                                frameSteps.increment()
                                logger.warning(thinner ? "transcoding cannot keep up at full frame rate; every rendition now encodes one frame in \(n)"
                                                       : "transcoding caught up; every rendition now encodes one frame in \(n)",
                                               metadata: ["stream": "\(streamID)", "lag_seconds": "\(policy.lag)", "frame_step": "\(n)"])
                            }
                        }
                    default:
                        break
                    }
                }
                frames.report(encoder.framesEncoded)
                decodeErrors.report(encoder.decodeErrors)
                slateFrames.report(encoder.slateFramesEncoded)
                thumbnails.report(encoder.thumbnailsTaken)
                thumbnailErrors.report(encoder.thumbnailErrors)
                thinned.report(encoder.framesThinned)
            }
        }
        thread.name = "transcode-\(streamID)"
        thread.start()
    }

    /// Queues input, stamped with its arrival. Past the bound, non-keyframe video is shed rather
    /// than queued without limit.
    func submit(_ message: WireMessage) {
        let arrived = inbox.seconds()
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
            q.messages.append(QueuedMessage(message: message, arrived: arrived))
            return true
        }
        if accepted { inbox.available.signal() } else { dropped.increment() }
    }

    /// The stream moved to another worker: encode what is queued, flush the encoders, then stop.
    func release() {
        let arrived = inbox.seconds()
        inbox.queue.withLock { $0.messages.append(QueuedMessage(message: .release(streamID: streamID), arrived: arrived)) }
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
