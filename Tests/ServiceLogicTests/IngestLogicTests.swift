@testable import Ingest
import RTMP
import StorecastWire
import Testing

@Suite struct TimestampNormalizerTests {
    @Test func unwrapsThe32BitWrap() {
        var n = TimestampNormalizer()
        _ = n.normalize(UInt32.max - 10, track: 1)
        let (t, c) = n.normalize(5, track: 1)
        #expect(t == 16)
        #expect(c == .wrapped)
    }

    @Test func clientRestartingAtZeroContinuesTheTimeline() {
        var n = TimestampNormalizer()
        _ = n.normalize(50_000, track: 1)
        let (t, c) = n.normalize(0, track: 1)
        #expect(t == 1)
        #expect(c == .jumped)
        let next = n.normalize(40, track: 1).0
        #expect(next == 41)
    }

    /// A publisher's clock faults as (raw timestamp, track) in; the session timeline out. Video
    /// is track 1 at 30 fps, audio track 2 in between; each fault must keep both tracks moving
    /// forward in step (no run of equal times, which would freeze the picture).
    static let faults: [(name: String, raw: [(UInt32, UInt8)], out: [Int64])] = [
        ("jump back 5 s", [(10_000, 1), (10_010, 2), (10_033, 1), (5_033, 1), (5_043, 2), (5_066, 1), (5_100, 1)],
         [0, 10, 33, 34, 44, 67, 101]),
        ("jump forward 1 h", [(10_000, 1), (10_010, 2), (3_610_000, 1), (3_610_010, 2), (3_610_033, 1)],
         [0, 10, 11, 21, 44]),
        ("wrap at 2^32 ms", [(UInt32.max - 40, 1), (UInt32.max - 30, 2), (UInt32.max &- 7, 1), (25, 1), (35, 2), (59, 1)],
         [0, 10, 33, 66, 76, 100]),
        ("audio 0.5 s behind video stays as it is", [(1_000, 1), (520, 2), (1_033, 1), (553, 2)],
         [0, -480, 33, -447]),
        // A relay that sends audio 1.5 s ahead of video: the session's clock steps back 1.5 s at
        // every switch, but neither track's own clock does; nothing is bridged (the timeline ran
        // away by 1.5 s a switch when the session's clock alone decided).
        ("audio 1.5 s ahead of video stays as it is", [(10_000, 2), (8_500, 1), (10_023, 2), (8_533, 1), (10_046, 2)],
         [0, -1_500, 23, -1_467, 46]),
    ]

    @Test(arguments: faults.indices)
    func clockFaultsKeepEveryTrackMoving(_ i: Int) {
        var n = TimestampNormalizer()
        let out = Self.faults[i].raw.map { n.normalize($0.0, track: $0.1).0 }
        #expect(out == Self.faults[i].out, "\(Self.faults[i].name)")
    }

    @Test func decodeOrderNeverGoesBackwardsWithinATrack() {
        var n = TimestampNormalizer()
        _ = n.normalize(100, track: 1)
        _ = n.normalize(90, track: 2)
        // One timeline for the session: 100 -> 0, audio 90 -> -10, video 95 -> -5, held at 0.
        let (t, c) = n.normalize(95, track: 1)
        #expect(t == 0)
        #expect(c == .backwards)
    }
}

@Suite struct StreamAssemblerTests {
    static let avcHeader = RTMPMessage(chunkStreamID: 6, timestamp: 0, typeID: 9, messageStreamID: 1,
        payload: [0x17, 0, 0, 0, 0] + [0x01, 0x42, 0xC0, 0x0D, 0xFF, 0xE1, 0x00, 0x18] + hex("6742c00dd90141fb0110000003001000000303c0f142a480") + [0x01, 0x00, 0x05] + hex("68cb83cb20"))
    static let aacHeader = RTMPMessage(chunkStreamID: 4, timestamp: 0, typeID: 8, messageStreamID: 1, payload: [0xAF, 0, 0x12, 0x08])

    static func hex(_ s: String) -> [UInt8] {
        stride(from: 0, to: s.count, by: 2).map { UInt8(s.dropFirst($0).prefix(2), radix: 16)! }
    }

    @Test func announcesBothTracksThenForwardsUnitsInOrder() throws {
        var a = StreamAssembler(identity: .init(streamID: 9, sessionID: 3, tenant: "t", streamName: "s"))
        #expect(a.received(Self.avcHeader).isEmpty)
        #expect(a.received(Self.aacHeader).isEmpty)
        let key = RTMPMessage(chunkStreamID: 6, timestamp: 1000, typeID: 9, messageStreamID: 1, payload: [0x17, 1, 0, 0, 0x21, 0, 0, 0, 1, 0x65])
        let events = a.received(key)
        guard case .message(.streamAnnounce(let announce)) = try #require(events.first) else { Issue.record("no announce"); return }
        #expect(announce.tracks.map(\.kind) == [.video, .audio])
        #expect(announce.tracks[0].width == 320 && announce.tracks[0].height == 240)
        #expect(announce.tracks[1].sampleRate == 44_100)
        guard case .message(.accessUnit(let unit)) = events.last else { Issue.record("no unit"); return }
        #expect(unit.isKeyframe && unit.compositionOffset == 0x21 && unit.dts == 0 && unit.sequence == 1)
        let audio = a.received(RTMPMessage(chunkStreamID: 4, timestamp: 1023, typeID: 8, messageStreamID: 1, payload: [0xAF, 1, 0x21]))
        #expect(audio == [.message(.accessUnit(AccessUnit(streamID: 9, trackID: 2, flags: 1, sequence: 2, dts: 23, compositionOffset: 0, data: [0x21])))])
    }

    @Test func frameBeforeSequenceHeaderIsRejectedNotFatal() {
        var a = StreamAssembler(identity: .init(streamID: 1, sessionID: 1, tenant: "t", streamName: "s"))
        let events = a.received(RTMPMessage(chunkStreamID: 6, timestamp: 0, typeID: 9, messageStreamID: 1, payload: [0x27, 1, 0, 0, 0, 0, 0, 0, 1, 0x41]))
        #expect(events == [.rejectedTag("video frame before its sequence header")])
    }

    /// A track's configuration crosses the wire in a field of at most 64 KiB; a bigger one is
    /// refused here, with a reason, instead of being sent and refused by the worker.
    @Test func anOversizedSequenceHeaderIsRejected() {
        var a = StreamAssembler(identity: .init(streamID: 1, sessionID: 1, tenant: "t", streamName: "s"))
        let aac = RTMPMessage(chunkStreamID: 4, timestamp: 0, typeID: 8, messageStreamID: 1, payload: [0xAF, 0, 0x12, 0x10] + Array(repeating: 0, count: 65_535))
        #expect(a.received(aac) == [.rejectedTag("aac sequence header of 65537 bytes, over the 65536-byte limit")])
        let avc = RTMPMessage(chunkStreamID: 6, timestamp: 0, typeID: 9, messageStreamID: 1, payload: Array(Self.avcHeader.payload) + Array(repeating: 0, count: 65_536))
        guard case .rejectedTag(let reason) = a.received(avc).first else { Issue.record("expected rejection"); return }
        #expect(reason.hasSuffix("over the 65536-byte limit"))
        // Within the limit both are accepted.
        #expect(a.received(RTMPMessage(chunkStreamID: 4, timestamp: 0, typeID: 8, messageStreamID: 1, payload: [0xAF, 0, 0x12, 0x10])).isEmpty)
    }

    @Test func unsupportedCodecIsRejectedWithItsName() {
        var a = StreamAssembler(identity: .init(streamID: 1, sessionID: 1, tenant: "t", streamName: "s"))
        guard case .unsupported(let reason) = a.received(RTMPMessage(chunkStreamID: 4, timestamp: 0, typeID: 8, messageStreamID: 1, payload: [0xB6, 0])).first else {  // Speex
            Issue.record("expected rejection"); return
        }
        #expect(reason.contains("sound format 11"))
    }
}

@Suite struct GOPCacheTests {
    static func unit(_ track: UInt8, _ key: Bool, _ seq: UInt64) -> WireMessage {
        .accessUnit(AccessUnit(streamID: 1, trackID: track, flags: key ? 1 : 0, sequence: seq, dts: Int64(seq), compositionOffset: 0, data: [1]))
    }

    @Test func snapshotStartsAtTheLatestKeyframe() {
        var cache = GOPCache()
        let announce = StreamAnnounce(streamID: 1, sessionID: 1, tenant: "t", streamName: "s", discontinuity: false, tracks: [])
        cache.record(.streamAnnounce(announce))
        for (i, m) in [Self.unit(1, true, 1), Self.unit(2, true, 2), Self.unit(1, false, 3), Self.unit(1, true, 4), Self.unit(2, true, 5), Self.unit(1, false, 6)].enumerated() {
            _ = i
            cache.record(m)
        }
        #expect(cache.snapshot == [.streamAnnounce(announce), Self.unit(1, true, 4), Self.unit(2, true, 5), Self.unit(1, false, 6)])
    }

    @Test func nothingDecodableBeforeTheFirstKeyframe() {
        var cache = GOPCache()
        cache.record(.streamAnnounce(StreamAnnounce(streamID: 1, sessionID: 1, tenant: "t", streamName: "s", discontinuity: false, tracks: [])))
        cache.record(Self.unit(1, false, 1))
        #expect(cache.units.isEmpty)
    }

    static let audioTrack = TrackConfig(trackID: 2, kind: .audio, codec: "aac", name: "audio", timescale: 1000, sampleRate: 44_100, channels: 1, config: [0x12, 0x08])
    static let videoTrack = TrackConfig(trackID: 1, kind: .video, codec: "h264", name: "source", timescale: 1000, width: 320, height: 240, config: [1])

    @Test func anAudioOnlyStreamKeepsItsLastTwoSeconds() {
        var cache = GOPCache()
        cache.record(.streamAnnounce(StreamAnnounce(streamID: 1, sessionID: 1, tenant: "t", streamName: "s", discontinuity: false, tracks: [Self.audioTrack])))
        for i in 0..<500 {  // 11.5 s of AAC frames, 23 ms apart
            cache.record(.accessUnit(AccessUnit(streamID: 1, trackID: 2, flags: 1, sequence: UInt64(i), dts: Int64(i) * 23, compositionOffset: 0, data: [1])))
        }
        let newest = Int64(499 * 23)
        #expect(cache.units.last?.dts == newest)
        #expect(cache.units.allSatisfy { $0.dts > newest - GOPCache.audioOnlyMilliseconds })
        #expect(cache.units.count == 87, "every frame later than 2 s before the newest (frames 413...499): \(cache.units.count)")
        #expect(cache.replayEnd == nil, "no video to replay")
    }

    @Test func theReplayEndsAtTheLatestVideoPicture() {
        var cache = GOPCache()
        cache.record(.streamAnnounce(StreamAnnounce(streamID: 1, sessionID: 1, tenant: "t", streamName: "s", discontinuity: true, tracks: [Self.videoTrack, Self.audioTrack])))
        let units: [AccessUnit] = [
            AccessUnit(streamID: 1, trackID: 1, flags: 1, sequence: 1, dts: 1000, compositionOffset: 66, data: [1]),
            AccessUnit(streamID: 1, trackID: 1, flags: 0, sequence: 2, dts: 1033, compositionOffset: 133, data: [1]),  // shown at 1166
            AccessUnit(streamID: 1, trackID: 1, flags: 0, sequence: 3, dts: 1066, compositionOffset: 33, data: [1]),
            AccessUnit(streamID: 1, trackID: 2, flags: 1, sequence: 4, dts: 1300, compositionOffset: 0, data: [1]),   // audio runs ahead
        ]
        for u in units { cache.record(.accessUnit(u)) }
        #expect(cache.replayEnd == 1166)
        #expect(cache.announce?.discontinuity == true)
        cache.announceDelivered()
        #expect(cache.announce?.discontinuity == false, "a replayed announce must not cut a second discontinuity")
    }

    @Test func boundedByUnitCount() {
        var cache = GOPCache()
        cache.record(Self.unit(1, true, 0))
        for i in 1...(GOPCache.maximumUnits + 50) { cache.record(Self.unit(1, false, UInt64(i))) }
        #expect(cache.units.count == GOPCache.maximumUnits)
    }
}

@Suite struct WorkerRegistryTests {
    @Test func leastLoadedWinsAndSilentWorkersExpireWithTheirStreams() {
        var r = WorkerRegistry()
        let t0 = ContinuousClock.Instant.now
        r.heard(from: WorkerStatus(workerID: "a", capacity: 2, streams: []), at: t0)
        r.heard(from: WorkerStatus(workerID: "b", capacity: 4, streams: []), at: t0)
        #expect(r.leastLoaded() == "b")
        r.assign(1, to: "b"); r.assign(2, to: "b"); r.assign(3, to: "b")
        #expect(r.leastLoaded() == "a")
        r.heard(from: WorkerStatus(workerID: "a", capacity: 2, streams: []), at: t0 + .seconds(3))
        let expired = r.expire(now: t0 + .milliseconds(3500))
        #expect(expired.map(\.0) == ["b"])
        #expect(expired.first?.1 == [1, 2, 3])
        #expect(r.workers.keys.sorted() == ["a"])
    }

    @Test func fullWorkersGetNothing() {
        var r = WorkerRegistry()
        r.heard(from: WorkerStatus(workerID: "a", capacity: 1, streams: []), at: .now)
        r.assign(1, to: "a")
        #expect(r.leastLoaded() == nil)
    }
}

@Suite struct LiveStreamTableTests {
    let t0 = ContinuousClock.Instant.now
    let config = LiveStreamTable.Configuration(reconnectWindow: .seconds(10), takeoverIdle: .seconds(2))

    @Test func dropThenReturnWithinTheWindowResumesTheSession() {
        var table = LiveStreamTable(configuration: config)
        #expect(table.claim(7, now: t0) == .new)
        table.publishing(7, sessionID: 70, owner: 1, remote: "a", now: t0)
        table.media(7, owner: 1, timeline: StreamTimeline(lastDts: 5000, lastSequence: 300), now: t0 + .seconds(5))
        let generation = table.dropped(7, owner: 1, now: t0 + .seconds(6))
        #expect(generation != nil)
        #expect(table.claim(7, now: t0 + .seconds(9)) == .resume(sessionID: 70, timeline: StreamTimeline(lastDts: 5000, lastSequence: 300), gap: .seconds(3)))
        table.publishing(7, sessionID: 70, owner: 2, remote: "b", now: t0 + .seconds(9))
        #expect(table.expire(7, generation: generation!) == nil, "a stale expiry after the resume does nothing")
    }

    @Test func windowRunsOutAndTheSessionEnds() {
        var table = LiveStreamTable(configuration: config)
        table.publishing(7, sessionID: 70, owner: 1, remote: "a", now: t0)
        let generation = table.dropped(7, owner: 1, now: t0)!
        #expect(table.claim(7, now: t0 + .seconds(11)) == .new)
        #expect(table.expire(7, generation: generation) == 70)
        #expect(table.claim(7, now: t0 + .seconds(11)) == .new)
    }

    /// A stream's own reconnect window (PATCH reconnectWindowSeconds) replaces the ingest's, as
    /// a table: (window, seconds until the publisher returns, resumed).
    static let ownWindows: [(window: Duration?, back: Int, resumes: Bool)] = [
        (nil, 10, true), (nil, 11, false), (.seconds(30), 25, true), (.seconds(30), 31, false), (.seconds(2), 3, false), (.zero, 1, false),
    ]

    @Test(arguments: ownWindows.indices)
    func aStreamsOwnReconnectWindow(_ i: Int) {
        let c = Self.ownWindows[i]
        var table = LiveStreamTable(configuration: config)
        table.publishing(7, sessionID: 70, owner: 1, remote: "a", now: t0)
        _ = table.dropped(7, owner: 1, window: c.window, now: t0)
        let claim = table.claim(7, now: t0 + .seconds(c.back))
        #expect((claim == .resume(sessionID: 70, timeline: nil, gap: .seconds(c.back))) == c.resumes, "window \(c.window.map { "\($0)" } ?? "default"), back after \(c.back) s: \(claim)")
    }

    @Test func liveConnectionIsBusyButASilentOneIsTakenOver() {
        var table = LiveStreamTable(configuration: config)
        table.publishing(7, sessionID: 70, owner: 1, remote: "10.0.0.1:5000", now: t0)
        table.media(7, owner: 1, timeline: StreamTimeline(lastDts: 100, lastSequence: 3), now: t0 + .seconds(1))
        #expect(table.claim(7, now: t0 + .milliseconds(1500)) == .busy(remote: "10.0.0.1:5000"))
        #expect(table.claim(7, now: t0 + .seconds(4)) == .takeover(sessionID: 70, previousOwner: 1, timeline: StreamTimeline(lastDts: 100, lastSequence: 3), gap: .seconds(3)))
        table.publishing(7, sessionID: 70, owner: 2, remote: "b", now: t0 + .seconds(4))
        #expect(table.dropped(7, owner: 1, now: t0 + .seconds(4)) == nil, "the replaced connection no longer owns the stream")
        #expect(table.unpublished(7, owner: 2) == 70)
    }
}

@Suite struct StreamAssemblerContinuationTests {
    @Test func aResumedPublishContinuesTheTimelineAndMarksADiscontinuity() throws {
        var a = StreamAssembler(identity: .init(streamID: 9, sessionID: 3, tenant: "t", streamName: "s"),
                                continuing: StreamTimeline(lastDts: 60_000, lastSequence: 1800), gap: .milliseconds(2500))
        _ = a.received(StreamAssemblerTests.avcHeader)
        let events = a.received(RTMPMessage(chunkStreamID: 6, timestamp: 0, typeID: 9, messageStreamID: 1, payload: [0x17, 1, 0, 0, 0, 0, 0, 0, 1, 0x65]))
        guard case .message(.streamAnnounce(let announce)) = events.first, case .message(.accessUnit(let unit)) = events.last else {
            Issue.record("expected announce and unit: \(events)"); return
        }
        #expect(announce.discontinuity)
        #expect(unit.dts == 62_500)
        #expect(unit.sequence == 1801)
        #expect(a.timeline == StreamTimeline(lastDts: 62_500, lastSequence: 1801))
    }
}

/// The frame rate measured from video timestamps when onMetaData declares none (Larix): each
/// row is a publisher's true rate, its frames stamped in RTMP's whole milliseconds, and the
/// estimate given once 2 s of video have been seen.
@Suite struct FrameRateEstimatorTests {
    static let cases: [(name: String, fps: Double)] = [
        ("30 fps", 30), ("29.97 fps (NTSC)", 30_000.0 / 1001), ("25 fps", 25), ("60 fps", 60), ("15 fps (a phone in low light)", 15),
    ]

    @Test(arguments: cases)
    func measuresOnceAfterTwoSeconds(_ c: (name: String, fps: Double)) {
        var estimator = FrameRateEstimator()
        let origin: Int64 = 5_000  // a continuing session's timeline does not start at 0
        var estimates: [(at: Int64, fps: Double)] = []
        for i in 0..<400 {
            let dts = origin + Int64((Double(i) * 1000 / c.fps).rounded())
            if let fps = estimator.frame(dts: dts) { estimates.append((dts, fps)) }
        }
        #expect(estimates.count == 1, "\(c.name): one estimate, got \(estimates)")
        #expect(abs((estimates.first?.fps ?? 0) - c.fps) <= 0.02, "\(c.name): \(estimates)")
        #expect((estimates.first?.at ?? 0) - origin >= FrameRateEstimator.span)
    }

    /// A pause in the first seconds (the app went to the background) and repeated timestamps
    /// (a clamped step back) do not skew the estimate: 30 fps stays 30.
    @Test func pausesAndRepeatedTimestampsAreLeftOut() {
        var estimator = FrameRateEstimator()
        var dts: Int64 = 0
        var estimates: [Double] = []
        for i in 0..<300 {
            if i == 20 { dts += 3_000 }             // 3 s without video
            if i % 25 == 0 { dts -= 33 }            // repeated timestamp after normalising
            if let fps = estimator.frame(dts: dts) { estimates.append(fps) }
            dts += Int64((Double(i + 1) * 1000 / 30).rounded()) - Int64((Double(i) * 1000 / 30).rounded())
        }
        #expect(estimates.count == 1 && abs((estimates.first ?? 0) - 30) <= 0.05, "\(estimates)")
    }

    @Test func aDeclaredRateIsNotMeasured() {
        var estimator = FrameRateEstimator()
        estimator.declared()
        #expect((0..<200).compactMap { estimator.frame(dts: Int64($0) * 33) }.isEmpty)
    }
}

/// The source's bitrate, from its access units' sizes and decode times: a golden table of
/// publishers, each a list of stretches (milliseconds of stream time, video bits per second,
/// audio bits per second, and a jump in the timestamps before the stretch).
@Suite struct SourceBitrateMeterTests {
    struct Stretch { var ms: Int64; var video: Int; var audio: Int; var jump: Int64 = 0 }
    static let cases: [(name: String, stretches: [Stretch], expected: [Int])] = [
        ("steady 2 Mbit/s video with 128 kbit/s audio", [Stretch(ms: 15_100, video: 2_000_000, audio: 128_000)], [2_128_000, 2_128_000, 2_128_000]),
        ("the phone cuts its bitrate by a quarter", [Stretch(ms: 10_100, video: 2_000_000, audio: 128_000), Stretch(ms: 10_000, video: 1_500_000, audio: 128_000)],
         [2_128_000, 2_128_000, 1_628_000, 1_628_000]),
        ("the app in the background: audio only", [Stretch(ms: 5_000, video: 2_000_000, audio: 128_000), Stretch(ms: 10_100, video: 0, audio: 128_000)],
         [2_128_000, 128_000, 128_000]),
        ("an 8 s stall starts a new window, never one stretched over it",
         [Stretch(ms: 7_000, video: 1_000_000, audio: 0), Stretch(ms: 5_100, video: 1_000_000, audio: 0, jump: 8_000)], [1_000_000, 1_000_000]),
        ("timestamps jump back 11 s (5 s before the first)", [Stretch(ms: 6_000, video: 1_000_000, audio: 0), Stretch(ms: 5_100, video: 1_000_000, audio: 0, jump: -11_000)],
         [1_000_000, 1_000_000]),
        ("under one window: nothing yet", [Stretch(ms: 4_900, video: 6_000_000, audio: 128_000)], []),
    ]

    @Test(arguments: cases.indices)
    func measuresEachWindow(_ i: Int) {
        let c = Self.cases[i]
        var meter = SourceBitrateMeter()
        var figures: [Int] = []
        var clock: Int64 = 90_000  // a continuing session's timeline does not start at 0
        for stretch in c.stretches {
            clock += stretch.jump
            let end = clock + stretch.ms
            // Video at 30 fps, audio in 1024-sample AAC frames at 48 kHz (21.33 ms), interleaved
            // by decode time as a publisher sends them.
            var units: [(dts: Int64, bytes: Int)] = []
            var v = 0.0
            while clock + Int64(v) < end { units.append((clock + Int64(v), stretch.video / 8 / 30)); v += 1000.0 / 30 }
            var a = 0.0
            while stretch.audio > 0, clock + Int64(a) < end { units.append((clock + Int64(a), Int(Double(stretch.audio) / 8 * 1024 / 48_000))); a += 1024_000.0 / 48_000 }
            for u in units.sorted(by: { $0.dts < $1.dts }) {
                if let bps = meter.unit(bytes: u.bytes, dts: u.dts) { figures.append(bps) }
            }
            clock = end
        }
        #expect(figures.count == c.expected.count, "\(c.name): \(figures)")
        for (got, want) in zip(figures, c.expected) {
            #expect(abs(Double(got) / Double(want) - 1) < 0.02, "\(c.name): \(figures), expected \(c.expected)")
        }
    }
}
