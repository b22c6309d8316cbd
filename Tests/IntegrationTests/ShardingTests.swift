import Foundation
import PostgresClient
import StorecastRuntime
import Testing

/// Two packagers register in PostgreSQL; ingest places each stream on its rendezvous owner, the
/// transcoder pushes there, and the API sends players to that packager.
@Suite(.serialized) struct ShardingTests {
    @Test func streamsAreShardedOverLivePackagersAndTheAPIKnowsWhere() async throws {
        let stack = try StorecastStack()
        let names = ["show-1", "show-2", "show-3", "show-4"]
        var keys: [String] = []
        for name in names { keys.append(try await stack.provisionStream(tenant: "shop", stream: name)) }
        try stack.start(workerArguments: ["--slots", "4", "--rungs", "360p"], extraPackagers: ["packager-b"])
        try await stack.waitUntilReady()
        let both = await StorecastStack.eventually(timeout: .seconds(15)) {
            (stack.service("storecast-ingest")?.log ?? "").contains("[\"packager-b\", \"packager-main\"]")
        }
        #expect(both, "ingest sees both packagers:\n\(stack.logs())")
        let bases = ["packager-main": stack.playbackBase, "packager-b": "http://127.0.0.1:\(stack.extraPackagerPorts["packager-b"]!)"]
        let owners = names.map { RendezvousHash.owner(of: "shop/\($0)", among: Array(bases.keys))! }
        #expect(Set(owners).count == 2, "these names spread over both packagers: \(owners)")

        // Before going live the API already says where each stream will play.
        for (name, owner) in zip(names, owners) {
            let r = try #require(await TestEnvironment.httpGet("http://127.0.0.1:\(stack.apiPort)/v1/tenants/shop/streams/\(name)/playback"))
            let body = try #require(try JSONSerialization.jsonObject(with: Data(r.body)) as? [String: Any])
            #expect(body["origin"] as? String == owner && body["playbackURL"] as? String == "\(bases[owner]!)/live/shop/\(name)/master.m3u8", "\(body)")
        }
        let publishers = try zip(names, keys).map { try EndToEndTests.publisher(url: stack.rtmpURL(key: $1), seconds: 40, logDirectory: stack.logDirectory) }
        defer { for p in publishers { p.stop(grace: 1) } }
        for (name, owner) in zip(names, owners) {
            let other = bases.keys.first { $0 != owner }!
            let served = await StorecastStack.eventually(timeout: .seconds(25)) {
                await TestEnvironment.httpGet("\(bases[owner]!)/live/shop/\(name)/master.m3u8")?.status == 200
            }
            #expect(served, "\(name) plays from \(owner):\n\(stack.logs())")
            #expect(await TestEnvironment.httpGet("\(bases[other]!)/live/shop/\(name)/master.m3u8")?.status == 404, "and not from \(other)")
        }
        // The placement is recorded, and a packager leaving (SIGTERM) takes itself out at once.
        let rows = try PostgresConnection(conninfo: stack.database).execute("SELECT slug, origin_node FROM streams ORDER BY slug")
        let recorded = Dictionary(uniqueKeysWithValues: (0..<rows.count).map { (rows.value($0, "slug") ?? "", rows.value($0, "origin_node") ?? "") })
        for (name, owner) in zip(names, owners) { #expect(recorded[name] == owner, "\(recorded)") }
        stack.service("packager-b")?.process.terminate()
        let gone = await StorecastStack.eventually(timeout: .seconds(10)) {
            let r = await TestEnvironment.httpGet("http://127.0.0.1:\(stack.apiPort)/v1/tenants/shop/streams/\(names[owners.firstIndex(of: "packager-b")!])/playback")
            return String(decoding: r?.body ?? [], as: UTF8.self).contains("\"origin\":\"packager-main\"")
        }
        #expect(gone, "with packager-b gone the API points its streams at packager-main")
        // Its live shows move there and go on playing (a fresh package, a new generation).
        for (name, owner) in zip(names, owners) where owner == "packager-b" {
            var playlist = ""
            let moved = await StorecastStack.eventually(timeout: .seconds(25)) {
                playlist = await TestEnvironment.httpText("\(bases["packager-main"]!)/live/shop/\(name)/360p/index.m3u8")
                return playlist.contains("#EXTINF")
            }
            #expect(moved, "\(name) plays from packager-main after packager-b left:\n\(playlist)\n\(stack.logs())")
        }
        #expect((stack.service("storecast-ingest")?.log ?? "").contains("the stream's packager is gone; moving the stream to a live one"))
        let after = try PostgresConnection(conninfo: stack.database).execute("SELECT slug, origin_node FROM streams ORDER BY slug")
        let origins = Set((0..<after.count).map { after.value($0, "origin_node") ?? "" })
        #expect(origins == ["packager-main"], "every stream's origin is recorded as packager-main: \(origins)")
        let leases = try PostgresConnection(conninfo: stack.database).execute("SELECT count(*) AS n FROM transcoder_leases WHERE end_reason = 'packager lost'")
        #expect(Int(leases.value(0, "n") ?? "0") == owners.filter { $0 == "packager-b" }.count, "one lease per moved stream ended with the reason")
        _ = await stack.stop()
    }
}
