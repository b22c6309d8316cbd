import Foundation
import StorecastTestSupport
import Testing

/// Recording on the real stack: the API turns it on, the packager writes the session to disk
/// off the live path, finalises VOD playlists at the end, and keeps the row in PostgreSQL.
@Suite(.serialized) struct RecordingTests {
    static func recordings(_ stack: StorecastStack, _ stream: String) async -> [[String: Any]] {
        let r = await TestEnvironment.httpGet("http://127.0.0.1:\(stack.apiPort)/v1/tenants/shop/streams/\(stream)/recordings")
        let body = r.flatMap { try? JSONSerialization.jsonObject(with: Data($0.body)) as? [String: Any] }
        return body?["recordings"] as? [[String: Any]] ?? []
    }

    @Test func aRecordedSessionBecomesAVODPlaylistFFprobePlays() async throws {
        let stack = try StorecastStack()
        let key = try await stack.provisionStream(tenant: "shop", stream: "show")
        let otherKey = try await stack.provisionStream(tenant: "shop", stream: "unrecorded")
        let dir = stack.logDirectory.appendingPathComponent("recordings")
        try stack.start(packagerArguments: ["--recordings-dir", dir.path], apiArguments: ["--webhook-allow-private-networks"])
        try await stack.waitUntilReady()
        let api = "http://127.0.0.1:\(stack.apiPort)/v1/tenants/shop/streams"
        // A tenant's webhook that asked for recording.ready alone (issue 16).
        let receiver = try WebhookTests.Receiver(logDirectory: stack.logDirectory)
        defer { receiver.process?.stop() }
        let endpoint = try await WebhookTests.endpoint("http://127.0.0.1:\(stack.apiPort)", tenant: "shop", url: receiver.url, eventTypes: ["recording.ready"])
        try await receiver.start(secret: endpoint.secret)
        #expect(await TestEnvironment.http("PUT", "\(api)/show/recording", json: #"{"enabled": true}"#)?.status == 200)
        #expect(await TestEnvironment.http("PUT", "\(api)/nope/recording", json: #"{"enabled": true}"#)?.status == 404)
        #expect(await TestEnvironment.http("PUT", "\(api)/show/recording", json: #"{"enabled": "yes"}"#)?.status == 400)

        let publisher = try EndToEndTests.publisher(url: stack.rtmpURL(key: key), seconds: 8, logDirectory: stack.logDirectory)
        let other = try EndToEndTests.publisher(url: stack.rtmpURL(key: otherKey), seconds: 4, logDirectory: stack.logDirectory)
        defer { publisher.stop(grace: 1); other.stop(grace: 1) }
        // A product card while the show is on: the recording keeps it (issue 18).
        #expect(await StorecastStack.eventually(timeout: .seconds(15)) { await TestEnvironment.httpGet("\(stack.playbackBase)/live/shop/show/master.m3u8")?.status == 200 })
        let card = try #require(await TestEnvironment.http("POST", "\(api)/show/highlights", json: #"{"productId":"sku-9","title":"Green scarf","durationSeconds":2}"#))
        let cardID = String(decoding: card.body, as: UTF8.self).firstMatch(of: /"id":(\d+)/).map { String($0.1) } ?? "?"
        let cardStart = String(decoding: card.body, as: UTF8.self).firstMatch(of: /"startDate":"([^"]+)"/).map { String($0.1) } ?? "?"
        #expect(card.status == 201, "\(String(decoding: card.body, as: UTF8.self))")
        var rows: [[String: Any]] = []
        let ready = await StorecastStack.eventually(timeout: .seconds(40)) {
            rows = await Self.recordings(stack, "show")
            return rows.first?["state"] as? String == "ready"
        }
        #expect(ready, "recording ready after the session: \(rows)\n\(stack.logs())")
        let row = try #require(rows.first)
        #expect(rows.count == 1)
        let seconds = row["durationSeconds"] as? Double ?? 0
        #expect(abs(seconds - 8) < 2.5, "about the 8 s published: \(seconds)")
        #expect((row["bytes"] as? Int ?? 0) > 100_000)
        let path = try #require(row["path"] as? String)
        #expect(path.hasPrefix(dir.path + "/shop/show/"))
        try await Self.expectRecordingEvent(receiver, "recording.ready", of: row)

        let vod = try String(contentsOfFile: path + "/360p/index.m3u8", encoding: .utf8)
        #expect(vod.contains("#EXT-X-PLAYLIST-TYPE:VOD") && vod.hasSuffix("#EXT-X-ENDLIST\n"), "\(vod)")
        #expect(!vod.contains("EXT-X-PART"), "a VOD playlist lists whole segments")
        for rendition in ["360p", "audio"] {
            let text = try String(contentsOfFile: path + "/\(rendition)/index.m3u8", encoding: .utf8)
            #expect(text.contains(#"#EXT-X-DATERANGE:ID="highlight-\#(cardID)",CLASS="com.storecast.highlight",START-DATE="\#(cardStart)",DURATION=2.000,X-PRODUCT-ID="sku-9",X-TITLE="Green scarf""#),
                    "the replay keeps the card where the show had it: \(text)")
        }
        // In band too: a segment of the recording carries the card as an ID3 `emsg`, so a file
        // cut from the show keeps it without the playlist.
        let segmentFiles = try FileManager.default.contentsOfDirectory(atPath: path + "/360p").filter { $0.hasSuffix(".m4s") }
        let carrying = segmentFiles.filter { name in
            let bytes = FileManager.default.contents(atPath: path + "/360p/" + name).map { [UInt8]($0) } ?? []
            return BoxTree.parse(bytes).contains { $0.type == "emsg" && String(decoding: $0.payload, as: UTF8.self).contains(#""ID":"highlight-\#(cardID)""#) }
        }
        #expect(carrying.count == 1, "one segment of the recording carries the card in band: \(carrying) of \(segmentFiles.sorted())")
        let master = try String(contentsOfFile: path + "/master.m3u8", encoding: .utf8)
        let lines = master.split(separator: "\n")
        #expect(lines.contains("360p/index.m3u8") && master.contains("URI=\"audio/index.m3u8\""), "a recording's renditions sit beside its master (no generation): \(master)")
        // ffprobe reads the VOD playlist itself (init + every segment, as a player would).
        let probe = try await EndToEndTests.probe(URL(fileURLWithPath: path + "/360p/index.m3u8"), ["-show_entries", "format=duration", "-of", "csv=p=0"])
        let probed = Double(probe.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        #expect(abs(probed - seconds) < 0.5, "ffprobe's duration \(probed) matches the row's \(seconds)")
        #expect(await Self.recordings(stack, "unrecorded").isEmpty, "a stream without recording has no rows")

        // Deleting it (issue 16): the row and its bytes of the tenant's storage go at once, and
        // the packager that wrote the files removes them.
        let id = try #require(row["id"] as? Int)
        let storage = "http://127.0.0.1:\(stack.apiPort)/v1/tenants/shop/storage"
        #expect(String(decoding: await TestEnvironment.httpGet(storage)?.body ?? [], as: UTF8.self).contains(#""recordingsBytes":\#(row["bytes"] as? Int ?? -1)"#))
        #expect(await TestEnvironment.http("DELETE", "\(api)/show/recordings/\(id)")?.status == 204)
        #expect(await Self.recordings(stack, "show").isEmpty)
        #expect(String(decoding: await TestEnvironment.httpGet(storage)?.body ?? [], as: UTF8.self).contains(#""recordingsBytes":0"#), "its bytes left the tenant's storage")
        #expect(await StorecastStack.eventually(timeout: .seconds(15)) { !FileManager.default.fileExists(atPath: path) }, "the packager removed the files:\n\(stack.service("storecast-packager")?.log.suffix(2000) ?? "")")
        #expect(FileManager.default.fileExists(atPath: dir.path + "/shop/show"), "only that recording's directory went")
        #expect(await TestEnvironment.http("DELETE", "\(api)/show/recordings/\(id)")?.status == 404, "deleted once")
        // A stream that is over can be deleted with its sessions; then it is gone.
        var deleted: Int?
        #expect(await StorecastStack.eventually(timeout: .seconds(15)) {
            deleted = await TestEnvironment.http("DELETE", "\(api)/unrecorded")?.status
            return deleted == 204  // 409 while it is still in its reconnect window
        }, "\(deleted.map(String.init) ?? "no answer")")
        #expect(await TestEnvironment.httpGet("\(api)/unrecorded")?.status == 404)
        // What the packager still holds of it is not served once the stream is deleted.
        #expect(await TestEnvironment.httpGet("\(stack.playbackBase)/live/shop/unrecorded/master.m3u8")?.status == 404)
        _ = await stack.stop()
    }

    /// A full disk (a 384 KiB tmpfs) fails the recording with the reason; live playback goes on.
    @Test func aFullDiskFailsTheRecordingAndLiveGoesOn() async throws {
        let stack = try StorecastStack()
        let key = try await stack.provisionStream(tenant: "shop", stream: "tiny")
        let dir = stack.logDirectory.appendingPathComponent("tiny-disk")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let (mounted, mountLog) = try await ServiceProcess.run(URL(fileURLWithPath: "/bin/mount"), ["-t", "tmpfs", "-o", "size=384k", "tmpfs", dir.path])
        try #require(mounted == 0, "this test mounts a small tmpfs and needs root: \(mountLog)")
        defer { _ = try? Process.run(URL(fileURLWithPath: "/bin/umount"), arguments: ["-l", dir.path]) }
        try stack.start(packagerArguments: ["--recordings-dir", dir.path], apiArguments: ["--webhook-allow-private-networks"])
        try await stack.waitUntilReady()
        let receiver = try WebhookTests.Receiver(logDirectory: stack.logDirectory)
        defer { receiver.process?.stop() }
        let endpoint = try await WebhookTests.endpoint("http://127.0.0.1:\(stack.apiPort)", tenant: "shop", url: receiver.url, eventTypes: ["recording.failed"])
        try await receiver.start(secret: endpoint.secret)
        #expect(await TestEnvironment.http("PUT", "http://127.0.0.1:\(stack.apiPort)/v1/tenants/shop/streams/tiny/recording", json: #"{"enabled": true}"#)?.status == 200)
        let publisher = try EndToEndTests.publisher(url: stack.rtmpURL(key: key), seconds: 30, logDirectory: stack.logDirectory)
        defer { publisher.stop(grace: 1) }
        var rows: [[String: Any]] = []
        let failed = await StorecastStack.eventually(timeout: .seconds(30)) {
            rows = await Self.recordings(stack, "tiny")
            return rows.first?["state"] as? String == "failed"
        }
        #expect(failed, "the recording fails when the disk is full: \(rows)\n\(stack.logs())")
        #expect((rows.first?["error"] as? String)?.contains("No space left on device") == true, "\(rows)")
        try await Self.expectRecordingEvent(receiver, "recording.failed", of: try #require(rows.first))
        // Live keeps going: the playlist still gains segments after the failure.
        let playlist = { await TestEnvironment.httpText("\(stack.playbackBase)/live/shop/tiny/360p/index.m3u8") }
        let last = { (text: String) in text.matches(of: /\nseg-(\d+)\.m4s/).last.map { Int($0.1)! } ?? -1 }
        let before = last(await playlist())
        let advanced = await StorecastStack.eventually(timeout: .seconds(10)) { last(await playlist()) >= before + 2 }
        let after = last(await playlist())
        #expect(before >= 0 && advanced, "live segments after the failure: \(before) → \(after)")
        _ = await stack.stop()
    }

    /// The receiver, whose endpoint asked for `type` alone, gets that event of the recording
    /// `row` (verified, with its id, state and error) and nothing else of the show.
    static func expectRecordingEvent(_ receiver: WebhookTests.Receiver, _ type: String, of row: [String: Any]) async throws {
        let delivered = await StorecastStack.eventually(timeout: .seconds(15)) { receiver.requests.contains { $0["answer"] as? Int == 200 } }
        let requests = receiver.requests
        #expect(delivered && requests.allSatisfy { $0["type"] as? String == type && $0["verified"] as? Bool == true }, "only \(type), verified: \(requests)")
        let data = try #require(requests.first?["data"] as? [String: Any], "\(requests)")
        #expect(data["recordingId"] as? Int == row["id"] as? Int && data["state"] as? String == row["state"] as? String && data["stream"] as? String == row["stream"] as? String,
                "the event names the recording: \(data) \(row)")
        #expect(data["error"] as? String == row["error"] as? String, "and why it failed, where it did: \(data)")
    }

    /// Bytes of every file under `dir`.
    static func diskBytes(_ dir: URL) -> Int {
        let files = FileManager.default.enumerator(at: dir, includingPropertiesForKeys: [.fileSizeKey])
        return (files?.allObjects as? [URL] ?? []).reduce(0) { $0 + ((try? $1.resourceValues(forKeys: [.fileSizeKey]).fileSize) ?? 0) }
    }

    /// A tenant's storage quota covers its recordings and DVR files: the recording that reaches
    /// it stops there, stays playable and says why; the next session records nothing and says
    /// why; the DVR files stay within it; live playback goes on in every rendition.
    @Test func aTenantAtItsStorageQuotaGetsATruncatedRecordingAndLiveGoesOn() async throws {
        let stack = try StorecastStack()
        let key = try await stack.provisionStream(tenant: "shop", stream: "quota")
        let extraKey = try await stack.provisionStream(tenant: "shop", stream: "extra")
        let (recordings, dvr) = (stack.logDirectory.appendingPathComponent("recordings"), stack.logDirectory.appendingPathComponent("dvr"))
        try stack.start(packagerArguments: ["--recordings-dir", recordings.path, "--dvr-window", "300", "--dvr-dir", dvr.path])
        try await stack.waitUntilReady()
        let api = "http://127.0.0.1:\(stack.apiPort)/v1/tenants"
        let quota = 2_000_000
        #expect(await TestEnvironment.http("PUT", "\(api)/shop/storage-quota", json: #"{"bytes": -1}"#)?.status == 400)
        #expect(await TestEnvironment.http("PUT", "\(api)/nobody/storage-quota", json: #"{"bytes": 1}"#)?.status == 404)
        #expect(await TestEnvironment.http("PUT", "\(api)/shop/storage-quota", json: #"{"bytes": \#(quota)}"#)?.status == 200)
        #expect(await TestEnvironment.http("PUT", "\(api)/shop/streams/quota/recording", json: #"{"enabled": true}"#)?.status == 200)
        #expect(await TestEnvironment.http("PUT", "\(api)/shop/streams/extra/recording", json: #"{"enabled": true}"#)?.status == 200)

        let publisher = try EndToEndTests.publisher(url: stack.rtmpURL(key: key), seconds: 16, logDirectory: stack.logDirectory)
        defer { publisher.stop(grace: 1) }
        let watcher = try await RenditionWatcher(masterURL: "\(stack.playbackBase)/live/shop/quota/master.m3u8")
        var rows: [[String: Any]] = []
        let truncated = await StorecastStack.eventually(timeout: .seconds(30)) {
            rows = await Self.recordings(stack, "quota")
            return rows.first?["state"] as? String == "truncated"
        }
        #expect(truncated, "the recording stops at the quota: \(rows)\n\(stack.logs())")
        let row = try #require(rows.first)
        #expect((row["error"] as? String)?.contains("storage quota is used up") == true, "the row says why: \(row)")
        let bytes = row["bytes"] as? Int ?? 0, seconds = row["durationSeconds"] as? Double ?? 0
        #expect(bytes > 0 && bytes <= quota, "the recording holds what fit: \(bytes) of \(quota) bytes")
        #expect(seconds >= 1 && seconds < 12, "and stopped before the show did: \(seconds) s of 16")
        print("storage quota: the recording stopped at \(bytes) bytes, \(seconds) s; files \(Self.diskBytes(URL(fileURLWithPath: row["path"] as? String ?? "/nonexistent"))) bytes")
        let path = try #require(row["path"] as? String)
        let vod = try String(contentsOfFile: path + "/360p/index.m3u8", encoding: .utf8)
        #expect(vod.contains("#EXT-X-PLAYLIST-TYPE:VOD") && vod.hasSuffix("#EXT-X-ENDLIST\n"), "what was recorded plays: \(vod)")
        let probe = try await EndToEndTests.probe(URL(fileURLWithPath: path + "/360p/index.m3u8"), ["-show_entries", "format=duration", "-of", "csv=p=0"])
        #expect(abs((Double(probe.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) - seconds) < 2.5, "ffprobe plays the truncated recording: \(probe) vs \(seconds) s")

        // Live goes on in every rendition, with no ENDLIST, after the recording stopped.
        let mark = watcher.elapsed
        try await Task.sleep(for: .seconds(4))
        let timelines = watcher.stop()
        for (rendition, t) in timelines {
            #expect(!t.endlist && t.arrivals.contains { $0 > mark + 1 }, "\(rendition) keeps advancing, with no ENDLIST, after the quota is reached")
        }
        #expect(timelines.count >= 2, "every rendition watched: \(timelines.keys.sorted())")
        // The DVR files of the tenant stay within the quota (one segment's slack per rendition).
        let onDisk = Self.diskBytes(dvr.appendingPathComponent("shop"))
        #expect(onDisk > 0 && onDisk + bytes <= quota + 100_000, "DVR \(onDisk) bytes + recordings \(bytes) against the quota \(quota)")
        let use = await TestEnvironment.httpGet("\(api)/shop/storage").flatMap { try? JSONSerialization.jsonObject(with: Data($0.body)) as? [String: Any] }
        #expect(use?["quotaBytes"] as? Int == quota && use?["recordingsBytes"] as? Int == bytes, "the API reports the tenant's use: \(use ?? [:])")

        // Another show of the tenant starts with the quota used up: nothing is recorded, and its
        // row says why.
        let extra = try EndToEndTests.publisher(url: stack.rtmpURL(key: extraKey), seconds: 6, logDirectory: stack.logDirectory)
        defer { extra.stop(grace: 1) }
        let refused = await StorecastStack.eventually(timeout: .seconds(30)) {
            rows = await Self.recordings(stack, "extra")
            return rows.first?["state"] as? String == "failed"
        }
        #expect(refused, "a recording started over the quota fails with the reason: \(rows)")
        #expect((rows.first?["error"] as? String)?.contains("storage quota is used up") == true && rows.first?["bytes"] as? Int == 0, "\(rows.first ?? [:])")
        _ = await stack.stop()
    }
}
