import StorecastRuntime

/// How a live stream looks to its viewers, from what reaches the packager, as a pure decider
/// with the clock as a parameter (issue 16: `stream.health_changed`, and `health` in a
/// stream's live status).
///
/// Each stream's media is watched on arrival: its video (one video track, the lowest id: every
/// rendition has the same pictures) and its audio. Once a second, ``evaluate(now:)`` names each
/// stream's state:
/// - `unhealthy`: no media for ``stallAfter`` (the publisher stalled, or its network dropped);
/// - `degraded`, with reasons: video missing for ``stallAfter`` while audio flows (an app in
///   the background), keyframes further apart than ``longestKeyframeInterval`` (players join
///   and switch renditions late), fewer than ``lowestFrameRate`` frames a second;
/// - `healthy` otherwise.
/// A new state is reported once it has held for ``settle`` (no flapping on one late frame), but
/// a stall at once (it is judged over ``stallAfter`` already); the first report comes no sooner
/// than ``frameWindow`` after the announce, when every check can judge.
struct StreamHealth: Sendable {
    static let stallAfter: Duration = .seconds(4)
    static let longestKeyframeInterval: Duration = .milliseconds(4500)
    static let lowestFrameRate = 12.0
    static let settle: Duration = .seconds(3)
    /// Frames are counted over this window for the frame rate.
    static let frameWindow: Duration = .seconds(5)

    enum State: String, Sendable, Equatable, Codable {
        case healthy, degraded, unhealthy
    }

    /// Why a stream is not healthy: a stable code (what a change is judged on) and a message
    /// with the figures of the moment it was reported, as the live status stores it.
    typealias Reason = StreamLiveStatus.Reason

    struct Report: Sendable, Equatable {
        var streamID: Int64
        var sessionID: Int64
        var state: State
        var reasons: [Reason]
    }

    private struct Watched: Sendable {
        var sessionID: Int64
        var videoTrack: UInt8?
        var audioTracks: Set<UInt8> = []
        var since: ContinuousClock.Instant
        var firstVideo: ContinuousClock.Instant?
        var lastVideo: ContinuousClock.Instant?
        var lastAudio: ContinuousClock.Instant?
        /// Arrivals of the video track's frames within ``frameWindow``, and of its keyframes.
        var frames: [ContinuousClock.Instant] = []
        var lastKeyframe: ContinuousClock.Instant?
        var keyframeGap: Duration = .zero
        var reported: (State, [String])?
        var pending: (state: State, codes: [String], since: ContinuousClock.Instant)?
    }

    private var streams: [Int64: Watched] = [:]

    /// A stream's tracks, from its announce: which to watch. A new session starts over.
    mutating func announce(streamID: Int64, sessionID: Int64, videoTracks: [UInt8], audioTracks: [UInt8], now: ContinuousClock.Instant) {
        if streams[streamID]?.sessionID != sessionID {
            streams[streamID] = Watched(sessionID: sessionID, since: now)
        }
        streams[streamID]?.videoTrack = videoTracks.min()
        streams[streamID]?.audioTracks = Set(audioTracks)
    }

    /// A unit of `track` arrived.
    mutating func unit(streamID: Int64, track: UInt8, keyframe: Bool, now: ContinuousClock.Instant) {
        guard var s = streams[streamID] else { return }
        if track == s.videoTrack {
            if s.firstVideo == nil { s.firstVideo = now }
            s.lastVideo = now
            s.frames.append(now)
            if s.frames.count > 512 || (s.frames.first.map { now - $0 > Self.frameWindow } ?? false) {
                s.frames.removeAll { now - $0 > Self.frameWindow }
            }
            if keyframe {
                if let last = s.lastKeyframe { s.keyframeGap = now - last }
                s.lastKeyframe = now
            }
        } else if s.audioTracks.contains(track) {
            s.lastAudio = now
        }
        streams[streamID] = s
    }

    /// The stream ended: no more reports for it.
    mutating func ended(streamID: Int64) { streams[streamID] = nil }

    /// Each stream's state now; returns the changes to report.
    mutating func evaluate(now: ContinuousClock.Instant) -> [Report] {
        var reports: [Report] = []
        for id in streams.keys.sorted() {
            guard var s = streams[id] else { continue }
            let (state, reasons) = Self.judge(s, now: now)
            let codes = reasons.map(\.code)
            if let reported = s.reported, reported.0 == state, reported.1 == codes {
                s.pending = nil
            } else if let pending = s.pending, pending.state == state, pending.codes == codes {
                // A stall is already judged over ``stallAfter``: it is reported at once.
                if now - pending.since >= (state == .unhealthy ? .zero : Self.settle), now - s.since >= Self.frameWindow {
                    s.reported = (state, codes)
                    s.pending = nil
                    reports.append(Report(streamID: id, sessionID: s.sessionID, state: state, reasons: reasons))
                }
            } else {
                s.pending = (state, codes, now)
                if state == .unhealthy, now - s.since >= Self.frameWindow {
                    s.reported = (state, codes)
                    s.pending = nil
                    reports.append(Report(streamID: id, sessionID: s.sessionID, state: state, reasons: reasons))
                }
            }
            streams[id] = s
        }
        return reports
    }

    private static func judge(_ s: Watched, now: ContinuousClock.Instant) -> (State, [Reason]) {
        let last = [s.lastVideo, s.lastAudio].compactMap { $0 }.max() ?? s.since
        if now - last >= stallAfter {
            return (.unhealthy, [Reason(code: "stalled", message: "no media for \(seconds(now - last)) s: the publisher stalled or its network dropped")])
        }
        var reasons: [Reason] = []
        if s.videoTrack != nil {
            let lastVideo = s.lastVideo ?? s.since
            if now - lastVideo >= stallAfter {
                reasons.append(Reason(code: "video_missing", message: "no video for \(seconds(now - lastVideo)) s while audio continues (the publishing app may be in the background)"))
            } else if let firstVideo = s.firstVideo {
                let span = now - firstVideo
                if span >= frameWindow {
                    let rate = Double(s.frames.filter { now - $0 <= frameWindow }.count) / seconds(frameWindow)
                    if rate < lowestFrameRate {
                        reasons.append(Reason(code: "low_frame_rate", message: "\(Int(rate.rounded())) frames a second (under \(Int(lowestFrameRate)))"))
                    }
                }
                let gap = max(s.keyframeGap, now - (s.lastKeyframe ?? firstVideo))
                if gap > longestKeyframeInterval {
                    reasons.append(Reason(code: "sparse_keyframes", message: "keyframes \(seconds(gap)) s apart (want 2 s): players join and switch late"))
                }
            }
        }
        return (reasons.isEmpty ? .healthy : .degraded, reasons)
    }

    /// `d` in seconds, to a tenth.
    private static func seconds(_ d: Duration) -> Double {
        ((Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18) * 10).rounded() / 10
    }
}
