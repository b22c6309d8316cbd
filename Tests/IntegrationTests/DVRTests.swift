import Foundation
import Testing

/// A DVR window longer than the in-memory live window: older segments stay listed and are
/// served from disk; files that leave the DVR window are deleted.
@Suite(.serialized) struct DVRTests {
    /// A stack whose packager keeps its DVR window in a directory of its own, and a publisher
    /// live on shop/`stream` for `seconds`.
    static func publishing(_ stream: String, seconds: Int, packager arguments: [String]) async throws -> (stack: StorecastStack, dvr: URL, publisher: ServiceProcess, key: String) {
        let stack = try StorecastStack()
        let key = try await stack.provisionStream(tenant: "shop", stream: stream)
        let dir = stack.logDirectory.appendingPathComponent("dvr-\(stream)")
        try stack.start(packagerArguments: arguments + ["--dvr-dir", dir.path])
        try await stack.waitUntilReady()
        let publisher = try EndToEndTests.publisher(url: stack.rtmpURL(key: key), seconds: seconds, logDirectory: stack.logDirectory)
        return (stack, dir, publisher, key)
    }

    @Test func segmentsOlderThanTheLiveWindowPlayFromDisk() async throws {
        let (stack, dir, publisher, _) = try await Self.publishing("dvr", seconds: 45, packager: ["--window", "2", "--dvr-window", "8"])
        defer { publisher.stop(grace: 1) }
        let base = "\(stack.playbackBase)/live/shop/dvr/360p"
        var playlist = ""
        let listed = await StorecastStack.eventually(timeout: .seconds(30)) {
            playlist = await TestEnvironment.httpText("\(base)/index.m3u8")
            return (playlist.firstMatch(of: /#EXT-X-MEDIA-SEQUENCE:(\d+)/).map { Int($0.1)! } ?? 0) >= 2
        }
        #expect(listed, "the DVR window scrolls:\n\(playlist)\n\(stack.logs())")
        // Segment 1 just left the list; it stays fetchable from disk for its duration plus the
        // playlist's (RFC 8216 6.2.2), about 12 s here.
        #expect(await TestEnvironment.httpGet("\(base)/seg-1.m4s")?.status == 200, "a segment that just left the list is still served")
        let sequences = playlist.matches(of: /\nseg-(\d+)\.m4s/).map { Int($0.1)! }
        #expect(sequences.count >= 4, "more than the 2 segments held in memory are listed: \(sequences)")
        let total = playlist.matches(of: /#EXTINF:([\d.]+),/).reduce(0.0) { $0 + Double($1.1)! }
        #expect(total >= 6 && total <= 12, "about the 8 s DVR window is listed: \(total)")
        // The oldest listed segment comes from disk and decodes.
        let oldest = sequences[0]
        let segment = try #require(await TestEnvironment.httpGet("\(base)/seg-\(oldest).m4s"))
        #expect(segment.status == 200)
        let initData = try #require(await TestEnvironment.httpGet("\(base)/init.mp4")).body
        let file = stack.logDirectory.appendingPathComponent("dvr-oldest.mp4")
        try Data(initData + segment.body).write(to: file)
        let frames = try await EndToEndTests.probe(file, ["-count_frames", "-select_streams", "v:0", "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0"])
        #expect((Int(frames.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) >= 30, "\(frames)")
        // Files past the DVR window and their grace go; those in it stay.
        let renditionDir = dir.appendingPathComponent("shop/dvr/360p")
        var files: [String] = []
        let deleted = await StorecastStack.eventually(timeout: .seconds(30)) {
            files = (try? FileManager.default.contentsOfDirectory(atPath: renditionDir.path)) ?? []
            return !files.contains("seg-1.m4s")  // media sequence numbers start at 1 (PackagingPipeline.nextSequence)
        }
        #expect(deleted, "segment 1 left the DVR window and, after its grace, its file went: \(files.sorted())")
        #expect(files.contains { $0.hasPrefix("seg-") }, "the window's files stay: \(files.sorted())")
        #expect(await TestEnvironment.httpGet("\(base)/seg-1.m4s")?.status == 404)
        _ = await stack.stop()
    }

    /// An ended stream stays playable (with ENDLIST) for the retention, then leaves memory and
    /// its DVR files go.
    @Test func anEndedStreamLeavesMemoryAfterTheRetention() async throws {
        let (stack, dir, publisher, key) = try await Self.publishing("short", seconds: 5, packager: ["--ended-retention", "4", "--dvr-window", "30"])
        defer { publisher.stop(grace: 1) }
        let base = "\(stack.playbackBase)/live/shop/short"
        let ended = await StorecastStack.eventually(timeout: .seconds(20)) {
            await TestEnvironment.httpText("\(base)/360p/index.m3u8").hasSuffix("#EXT-X-ENDLIST\n")
        }
        #expect(ended, "the ended stream is still served, ended:\n\(stack.logs())")
        let oldMaster = await TestEnvironment.httpText("\(base)/master.m3u8")
        let oldVariant = try #require(oldMaster.split(separator: "\n").first { $0.hasSuffix("/360p/index.m3u8") }.map(String.init), "\(oldMaster)")
        #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("shop/short").path))
        let gone = await StorecastStack.eventually(timeout: .seconds(15)) {
            await TestEnvironment.httpGet("\(base)/master.m3u8")?.status == 404
        }
        #expect(gone, "after the retention the stream leaves memory")
        #expect((stack.service("storecast-packager")?.log ?? "").contains("ended stream left memory"))
        let filesGone = await StorecastStack.eventually(timeout: .seconds(5)) { !FileManager.default.fileExists(atPath: dir.appendingPathComponent("shop/short").path) }
        #expect(filesGone, "its DVR files are deleted")
        // The next show numbers its media from 1 again, under a new generation: the URLs the
        // last show's playlists named (served immutable) never name the new show's bytes.
        let again = try EndToEndTests.publisher(url: stack.rtmpURL(key: key), seconds: 5, logDirectory: stack.logDirectory)
        defer { again.stop(grace: 1) }
        var newMaster = ""
        let back = await StorecastStack.eventually(timeout: .seconds(25)) {
            newMaster = await TestEnvironment.httpText("\(base)/master.m3u8")
            return newMaster.contains("/360p/index.m3u8")
        }
        #expect(back, "the next show plays:\n\(stack.logs())")
        let newVariant = try #require(newMaster.split(separator: "\n").first { $0.hasSuffix("/360p/index.m3u8") }.map(String.init), "\(newMaster)")
        #expect(newVariant != oldVariant, "a new generation: \(oldVariant) then \(newVariant)")
        let newPlaylist = await TestEnvironment.httpText("\(base)/\(newVariant)")
        #expect(newPlaylist.contains("\nseg-1.m4s"), "numbered from 1 again: \(newPlaylist)")
        let stale = try #require(await TestEnvironment.httpGet("\(base)/\(oldVariant.replacingOccurrences(of: "index.m3u8", with: "seg-1.m4s"))"))
        #expect(stale.status == 404 && String(decoding: stale.body, as: UTF8.self).contains("reload master.m3u8"), "the last show's URL: \(stale.status)")
        _ = await stack.stop()
    }
}
