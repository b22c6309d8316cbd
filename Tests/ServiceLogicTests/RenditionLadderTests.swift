import Testing
@testable import Transcoder
import StorecastRuntime

@Suite struct RenditionLadderTests {
    static let cases: [(name: String, width: Int, height: Int, expected: [String])] = [
        ("landscape 1080p", 1920, 1080, ["1080p 1920x1080", "720p 1280x720", "480p 854x480", "360p 640x360"]),
        ("landscape 720p never upscales", 1280, 720, ["720p 1280x720", "480p 854x480", "360p 640x360"]),
        ("portrait phone 720x1280", 720, 1280, ["720p 720x1280", "480p 480x854", "360p 360x640"]),
        ("540p", 960, 540, ["480p 854x480", "360p 640x360"]),
        ("4:3 640x480", 640, 480, ["480p 640x480", "360p 480x360"]),
        ("below the lowest rung, named by its own height", 320, 240, ["240p 320x240"]),
    ]

    @Test(arguments: cases.indices)
    func plansRungs(_ i: Int) {
        let c = Self.cases[i]
        let plan = RenditionLadder.field.plan(sourceWidth: c.width, sourceHeight: c.height)
        #expect(plan.map { "\($0.name) \($0.width)x\($0.height)" } == c.expected, "\(c.name)")
        #expect(plan.allSatisfy { $0.width % 2 == 0 && $0.height % 2 == 0 })
    }

    /// The tenant's ladder ceiling (its largest rendition, as a short side).
    static let ceilings: [(name: String, width: Int, height: Int, ceiling: Int?, expected: [String])] = [
        ("none", 1920, 1080, nil, ["1080p 1920x1080", "720p 1280x720", "480p 854x480", "360p 640x360"]),
        ("720 leaves out 1080p", 1920, 1080, 720, ["720p 1280x720", "480p 854x480", "360p 640x360"]),
        ("a ceiling between rungs", 1920, 1080, 600, ["480p 854x480", "360p 640x360"]),
        ("above the source: the source decides", 1280, 720, 1080, ["720p 1280x720", "480p 854x480", "360p 640x360"]),
        ("portrait phone at 480", 720, 1280, 480, ["480p 480x854", "360p 360x640"]),
        ("below the lowest rung: one rendition at the ceiling", 1920, 1080, 240, ["240p 426x240"]),
        ("an odd ceiling rounds down to even", 1920, 1080, 241, ["240p 426x240"]),
    ]

    @Test(arguments: ceilings.indices)
    func plansUnderTheTenantsCeiling(_ i: Int) {
        let c = Self.ceilings[i]
        let plan = RenditionLadder.field.plan(sourceWidth: c.width, sourceHeight: c.height, ceiling: c.ceiling)
        #expect(plan.map { "\($0.name) \($0.width)x\($0.height)" } == c.expected, "\(c.name)")
        #expect(TranscoderSettings().applying(nil, ceiling: c.ceiling).ladderCeiling == c.ceiling)
    }

    @Test func placeholdersAreSixteenByNineOrUpright() {
        #expect(ThumbnailSchedule.placeholderSize(sourceWidth: 1280, sourceHeight: 720) == (16, 9))
        #expect(ThumbnailSchedule.placeholderSize(sourceWidth: 720, sourceHeight: 1280) == (9, 16))
        #expect(ThumbnailSchedule.placeholderSize(sourceWidth: 640, sourceHeight: 480) == (16, 9))
    }

    @Test func fieldBitrates() {
        #expect(RenditionLadder.field.rungs.map(\.bitrate) == [6_000_000, 2_000_000, 800_000, 400_000])
    }

    @Test func restrictedLadderKeepsOnlyNamedRungs() {
        let plan = RenditionLadder.field.restricted(to: ["480p", "360p"]).plan(sourceWidth: 1920, sourceHeight: 1080)
        #expect(plan.map(\.name) == ["480p", "360p"])
    }
}

@Suite struct KeyframeCadenceTests {
    @Test func keyframesFallOnTheFirstFrameOfEachGOP() {
        var cadence = KeyframeCadence(gopDuration: 2, timescale: 90_000)
        // 30 fps with jitter: frame times in 90 kHz ticks.
        var pts: [Int64] = []
        for i in 0..<200 {
            let jitter: Int64 = i % 3 == 0 ? 7 : 0
            pts.append(Int64(i) * 3000 + jitter + 1_890)
        }
        var keyframes: [Int64] = []
        for p in pts where cadence.isKeyframe(pts: p) { keyframes.append(p) }
        #expect(keyframes.map { $0 / 180_000 } == [0, 1, 2, 3])
        #expect(keyframes.first == pts.first)
    }

    @Test func sameDecisionsForEveryRendition() {
        var a = KeyframeCadence(gopDuration: 1, timescale: 90_000)
        var b = KeyframeCadence(gopDuration: 1, timescale: 90_000)
        var decisionsA: [Bool] = [], decisionsB: [Bool] = []
        for p in stride(from: Int64(0), to: 900_000, by: 3003) {
            decisionsA.append(a.isKeyframe(pts: p))
            decisionsB.append(b.isKeyframe(pts: p))
        }
        #expect(decisionsA == decisionsB)
        #expect(decisionsA.filter { $0 }.count == 10)
    }

    /// (replayUntil in frames, keyframe frame indices): 30 fps, 2 s GOP; during a replay a
    /// keyframe at least every 0.1 s (every third frame) and on the first frame after it, then
    /// the GOP cadence alone.
    static let replayTable: [(replayUntilFrame: Int?, keyframes: [Int])] = [
        (nil, [0, 60]),
        (0, [0, 1, 60]),
        (2, [0, 3, 60]),
        (3, [0, 3, 4, 60]),
        (12, [0, 3, 6, 9, 12, 13, 60]),
        (59, [0] + Array(stride(from: 3, through: 57, by: 3)) + [60]),
        (70, [0] + Array(stride(from: 3, through: 69, by: 3)) + [71]),
    ]

    @Test(arguments: replayTable.indices)
    func aReplayGetsAKeyframeEveryTenthOfASecond(_ row: Int) {
        let (until, expected) = Self.replayTable[row]
        var cadence = KeyframeCadence(gopDuration: 2, timescale: 90_000)
        cadence.replayUntil = until.map { Int64($0) * 3000 }
        let keyframes = (0..<90).filter { cadence.isKeyframe(pts: Int64($0) * 3000) }
        #expect(keyframes == expected)
    }

    /// (fast start seconds, first frame's index, keyframe frame indices): 30 fps, 2 s GOP; one
    /// extra keyframe on the first frame at least that long after the first keyframe unless the
    /// grid's came sooner, then the grid alone (a stream that starts mid-GOP keeps the grid).
    static let fastStartTable: [(fastStart: Double?, firstFrame: Int, keyframes: [Int])] = [
        (nil, 0, [0, 60, 120]),
        (0.6, 0, [0, 18, 60, 120]),
        (0.5, 0, [0, 15, 60, 120]),
        (1.0, 0, [0, 30, 60, 120]),
        (0.6, 50, [50, 60, 120]),          // the grid's keyframe comes first: no extra one
        (0.6, 30, [30, 48, 60, 120]),
        (3.0, 0, [0, 60, 120]),            // longer than a GOP: the grid's keyframe comes first
    ]

    @Test(arguments: fastStartTable.indices)
    func fastStartAddsOneEarlyKeyframe(_ row: Int) {
        let (fast, first, expected) = Self.fastStartTable[row]
        var cadence = KeyframeCadence(gopDuration: 2, timescale: 90_000, fastStart: fast)
        let keyframes = (first..<150).filter { cadence.isKeyframe(pts: Int64($0) * 3000) }
        #expect(keyframes == expected, "fast start \(String(describing: fast)) from frame \(first)")
    }

    @Test func resetForcesAKeyframe() {
        var c = KeyframeCadence(gopDuration: 2, timescale: 1000)
        let first = c.isKeyframe(pts: 0), second = c.isKeyframe(pts: 100)
        c.reset()
        let afterReset = c.isKeyframe(pts: 133)
        #expect(first && !second && afterReset)
    }
}

@Suite struct AudioRetimerTests {
    @Test func snapsToWholeFramesWithoutDrift() throws {
        var r = AudioRetimer(sampleRate: 44_100)
        // 1024 samples at 44.1 kHz is 23.22 ms; ingest rounds to whole milliseconds.
        var out: [Int64] = []
        for i in 0..<1000 {
            let ms = Int64((Double(i) * 1024 / 44.1).rounded())
            out.append(r.retime(milliseconds: ms))
        }
        let last = try #require(out.last)
        #expect(last == Int64(999 * 1024))
        #expect(zip(out, out.dropFirst()).allSatisfy { $1 - $0 == 1024 })
    }

    @Test func aGapIsKept() {
        var r = AudioRetimer(sampleRate: 48_000)
        _ = r.retime(milliseconds: 0)
        let afterGap = r.retime(milliseconds: 1000)
        #expect(afterGap == 48_000)
    }
}

@Suite struct ThumbnailScheduleTests {
    static let sizes: [(source: (Int, Int), still: (Int, Int))] = [
        ((1920, 1080), (640, 360)), ((854, 480), (640, 360)), ((720, 1280), (360, 640)), ((426, 240), (426, 240)), ((1440, 1080), (480, 360)),
    ]

    @Test(arguments: sizes.indices)
    func keepsTheAspectWithAShortSideOfAtMost360(_ i: Int) {
        let c = Self.sizes[i]
        let size = ThumbnailSchedule.size(sourceWidth: c.source.0, sourceHeight: c.source.1)
        #expect(size.width == c.still.0 && size.height == c.still.1, "\(c.source)")
    }

    @Test func oneStillPerIntervalOfStreamTime() {
        var schedule = ThumbnailSchedule(interval: 5, timescale: 90_000)
        let due = (0..<(30 * 12)).filter { schedule.isDue(pts: Int64($0) * 3000) }  // 12 s at 30 fps
        #expect(due == [0, 150, 300])
        var off = ThumbnailSchedule(interval: 0, timescale: 90_000)
        #expect(!(0..<100).contains { off.isDue(pts: Int64($0) * 3000) })
    }
}

@Suite struct LadderProfileTests {
    static let rungs = [LadderProfileStore.RungJSON(name: "360p", shortSide: 360, bitrate: 500_000),
                        LadderProfileStore.RungJSON(name: "720p", shortSide: 720, bitrate: 1_800_000)]

    @Test func validProfileSortsRungsLargestFirstAndDrivesTheLadder() throws {
        let profile = try LadderProfileStore.validated(name: "mobile", rungs: Self.rungs, preset: "ultrafast", gopSeconds: 1, lowLatency: false)
        #expect(profile.rungs.map(\.name) == ["720p", "360p"])
        let settings = TranscoderSettings(preset: "veryfast", gopSeconds: 2, rungs: ["1080p"]).applying(profile)
        #expect(settings.preset == "ultrafast" && settings.gopSeconds == 1 && !settings.lowLatency)
        #expect(settings.ladder.plan(sourceWidth: 1920, sourceHeight: 1080).map { "\($0.name) \($0.width)x\($0.height) \($0.bitrate)" }
                == ["720p 1280x720 1800000", "360p 640x360 500000"])
        #expect(TranscoderSettings(rungs: ["360p"]).applying(nil).ladder.rungs.map(\.name) == ["360p"], "no profile: the worker's settings")
    }

    static let refused: [(String, [LadderProfileStore.RungJSON], String, Int, String)] = [
        ("Bad Name", rungs, "veryfast", 2, "profile name must be"),
        ("p", [], "veryfast", 2, "1 to 8 rungs"),
        ("p", rungs + [rungs[0]], "veryfast", 2, "unique"),
        ("p", [.init(name: "odd", shortSide: 361, bitrate: 500_000)], "veryfast", 2, "even number"),
        ("p", [.init(name: "tiny", shortSide: 360, bitrate: 1_000)], "veryfast", 2, "bitrate must be"),
        ("p", rungs, "placebo", 2, "preset must be one of"),
        ("p", rungs, "veryfast", 3, "gopSeconds must be 1 or 2"),
    ]

    @Test(arguments: refused.indices)
    func refusesWithAMessageThatSaysWhatToFix(_ i: Int) {
        let c = Self.refused[i]
        do {
            _ = try LadderProfileStore.validated(name: c.0, rungs: c.1, preset: c.2, gopSeconds: c.3, lowLatency: true)
            Issue.record("accepted \(c)")
        } catch {
            #expect("\(error)".contains(c.4), "\(error)")
        }
    }
}
