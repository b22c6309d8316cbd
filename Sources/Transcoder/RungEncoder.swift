import FFmpegCodecs
import Foundation

/// One rung's scaler and libx264 encoder on a thread of their own. The rungs form a chain, largest
/// first: each rung passes the decoded frame on (or, with `forwardSource` off, its own scaled
/// picture, so the next rung scales from the nearest larger one) and then scales and encodes, so
/// the rungs work in parallel. The stream's thread waits for every rung
/// before it touches the frame again. libx264 blocks for milliseconds per frame; this is what lets
/// one stream's ladder use more than one core.
///
/// Thread safety is by hand-off: `submit` writes the request and signals; the rung thread reads
/// it, works, writes the result and signals back; `finish` reads the result. The scaler and
/// encoder are only touched by whichever side holds the turn, never both.
final class RungEncoder: @unchecked Sendable {
    let scaler: FrameScaler
    let encoder: H264Encoder
    private let work = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)
    private var request: (frame: VideoFrame, keyframe: Bool)?
    private var result: Result<[EncodedPacket], any Error> = .success([])
    private var stopping = false
    private var threadStarted = false
    private let name: String
    /// The next smaller rung, which scales from this rung's picture (or from the source frame
    /// passed along, when `forwardSource`).
    var next: RungEncoder?
    var forwardSource = false

    init(scaler: FrameScaler, encoder: H264Encoder, name: String) {
        self.scaler = scaler
        self.encoder = encoder
        self.name = name
    }

    /// Scale and encode on the calling thread (a ladder of one rung needs no hand-off).
    func encodeHere(_ frame: VideoFrame, keyframe: Bool) throws -> [EncodedPacket] {
        try encoder.encode(try scaler.scale(frame), forceKeyframe: keyframe)
    }

    /// Starts scaling and encoding `frame` on the rung's thread (and, through `next`, on every
    /// smaller rung); `finish` returns the packets. `frame` must not change until then.
    func submit(_ frame: VideoFrame, keyframe: Bool) {
        if !threadStarted {
            threadStarted = true
            let thread = Thread { [self] in loop() }
            thread.name = "rung-\(name)"
            thread.start()
        }
        request = (frame, keyframe)
        work.signal()
    }

    func finish() throws -> [EncodedPacket] {
        done.wait()
        return try result.get()
    }

    private func loop() {
        while true {
            work.wait()
            if stopping { return }
            guard let (frame, keyframe) = request else { continue }
            request = nil
            if forwardSource { next?.submit(frame, keyframe: keyframe) }  // smaller rungs start now
            do {
                let scaled = try scaler.scale(frame)
                if !forwardSource { next?.submit(scaled, keyframe: keyframe) }
                result = Result { try encoder.encode(scaled, forceKeyframe: keyframe) }
            } catch {
                if !forwardSource { next?.submit(frame, keyframe: keyframe) }  // the chain goes on from the larger picture
                result = .failure(error)
            }
            done.signal()
        }
    }

    /// Ends the rung's thread (the encoder itself is freed with this object).
    func stop() {
        guard threadStarted else { return }
        stopping = true
        work.signal()
    }
}
