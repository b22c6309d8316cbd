import Foundation
import Logging
import PostgresClient
import StorecastRuntime
import StorecastWire
import Testing

/// Issue 23's attacks, each on real sockets against the real executables: what was reproduced
/// on main must be refused, logged, and must not disturb anything else.
@Suite(.serialized) struct HostilePeerTests {
    static func announce(streamID: Int64, tenant: String, stream: String, session: Int64 = 1, ticket: [UInt8] = []) -> [UInt8] {
        WireCodec.encode(.batch([
            .streamAnnounce(StreamAnnounce(streamID: streamID, sessionID: session, tenant: tenant, streamName: stream, discontinuity: false, tracks: [
                TrackConfig(trackID: 2, kind: .audio, codec: "aac", name: "audio", timescale: 1000, sampleRate: 44100, channels: 1, config: [0x12, 0x08])], leaseTicket: ticket)),
        ] + (0..<50).map { i in .accessUnit(AccessUnit(streamID: streamID, trackID: 2, flags: 1, sequence: UInt64(i), dts: Int64(i) * 23, compositionOffset: 0, data: [0x21, 0x10, 0x04])) }))
    }

    static func ready(_ worker: String, capacity: UInt16) -> [UInt8] {
        WireCodec.encode(.workerReady(WorkerStatus(workerID: worker, capacity: capacity, streams: [])))
    }

    static func telemetry(service: String, node: String, exposition: String = "") -> [[UInt8]] {
        [WireTopic.telemetry, WireCodec.encode(.telemetry(Telemetry(service: service, node: node, pid: 1, uptimeSeconds: 1, exposition: exposition)))]
    }

    /// No key, or a key the cluster never allowed: the packager takes no media, ingest leases
    /// nothing, the collector reports nothing; each refusal with a key is logged.
    @Test func zeroMQRefusesPeersWithoutAnAllowedKey() async throws {
        let stack = try StorecastStack()
        _ = try await stack.provisionStream(tenant: "shop", stream: "live")
        // A stream the catalog has (else its playlist is 404 whether packaged or not).
        _ = try await stack.provisionStream(tenant: "shop", stream: "ghost")
        try stack.start()
        try await stack.waitUntilReady()
        let (work, renditions, telemetry) = stack.zmqEndpoints
        for credentials in [HostilePeer.Credentials.none, .stranger] {
            async let media: Void = HostilePeer.send([[Self.announce(streamID: 4242, tenant: "shop", stream: "ghost")]], type: .push, to: renditions, server: "packager", as: credentials, for: 3)
            async let worker: Void = HostilePeer.send([[Self.ready("rogue", capacity: 65535)]], type: .dealer, to: work, server: "ingest", as: credentials, for: 3)
            async let metrics: Void = HostilePeer.send([Self.telemetry(service: "forged", node: "n1")], type: .pub, to: telemetry, server: "metrics", as: credentials, for: 3)
            _ = try await (media, worker, metrics)
        }
        #expect(await TestEnvironment.httpGet("\(stack.playbackBase)/live/shop/ghost/master.m3u8")?.status == 404, "a peer without a key was packaged")
        let ingestLog = stack.service("storecast-ingest")?.log ?? ""
        #expect(ingestLog.components(separatedBy: "transcoder worker joined").count - 1 == 1, "only the real worker joined:\n\(ingestLog.suffix(3000))")
        let scrape = await TestEnvironment.httpText("http://127.0.0.1:\(stack.metricsPort)/metrics")
        #expect(!scrape.contains("service=\"forged\""), "forged telemetry reported")
        for name in ["storecast-packager", "storecast-ingest", "storecast-metrics"] {
            let log = stack.service(name)?.log ?? ""
            #expect(log.contains("ZeroMQ peer refused") && log.contains("is not in the allow-list"), "\(name) logs the stranger's refusal:\n\(log.suffix(2000))")
        }
        #expect(scrape.contains("storecast_zmq_peers_refused_total"), "refusals are counted")
        _ = await stack.stop()
    }

    /// A node with its own key (`storecast keys --node`) is allowed; revoked (`--revoke`), with no
    /// restart, its open connection's messages are dropped within seconds and a new connection
    /// is refused, while the nodes on role keys go on.
    @Test func aNodesOwnKeyIsRevokedWithoutARestart() async throws {
        let keys = FileManager.default.temporaryDirectory.appendingPathComponent("storecast-node-keys-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.copyItem(atPath: TestEnvironment.zmqKeys, toPath: keys)
        defer { try? FileManager.default.removeItem(atPath: keys) }
        let storecast = try TestEnvironment.binary("storecast")
        let added = try await ServiceProcess.run(storecast, ["keys", keys, "--node", "edge-7", "--role", "transcoder"])
        #expect(added.status == 0 && added.output.contains("STORECAST_ZMQ_NODE=edge-7"), "\(added.output)")
        let stack = try StorecastStack(zmqKeys: keys)
        _ = try await stack.provisionStream(tenant: "shop", stream: "live")
        try stack.start()
        try await stack.waitUntilReady()
        let node = try ClusterKeys.security(directory: keys, role: .transcoder, node: "edge-7", logger: Logger(label: "edge-7"))
        let telemetry = stack.zmqEndpoints.telemetry
        let scrapeURL = "http://127.0.0.1:\(stack.metricsPort)/metrics"
        let ticks = { (text: String) -> Int? in
            text.split(separator: "\n").last { $0.hasPrefix("edge_ticks_total{") }.flatMap { $0.split(separator: " ").last.flatMap { Int($0) } }
        }
        // The node reports a counter that rises every 200 ms, for 14 s, over one connection.
        async let sending: Void = HostilePeer.send({ n in [Self.telemetry(service: "edge", node: "edge-7", exposition: "edge_ticks_total \(n)")] },
                                                   type: .pub, to: telemetry, server: "metrics", as: .security(node), for: 14)
        var seen: Int?
        let allowed = await StorecastStack.eventually(timeout: .seconds(8)) {
            seen = ticks(await TestEnvironment.httpText(scrapeURL))
            return (seen ?? 0) > 3
        }
        #expect(allowed, "the node's own key is allowed: \(seen.map(String.init) ?? "nothing")\n\(stack.logs())")

        let revoked = try await ServiceProcess.run(storecast, ["keys", keys, "--revoke", "edge-7"])
        #expect(revoked.status == 0, "\(revoked.output)")
        try await Task.sleep(for: .seconds(3))
        let after = ticks(await TestEnvironment.httpText(scrapeURL))
        try await Task.sleep(for: .seconds(3))
        let later = ticks(await TestEnvironment.httpText(scrapeURL))
        #expect(after != nil && after == later, "the open connection's messages are dropped after the revocation: \(after.map(String.init) ?? "-") then \(later.map(String.init) ?? "-")")
        let metricsLog = { stack.service("storecast-metrics")?.log ?? "" }
        #expect(metricsLog().contains("edge-7 was taken off the allow-list") && metricsLog().contains("ZeroMQ allow-list reloaded"), "the collector reloads and says why it drops them:\n\(metricsLog().suffix(3000))")
        try await sending

        // A new connection with the revoked key is refused at the handshake.
        try await HostilePeer.send([Self.telemetry(service: "edge", node: "edge-7", exposition: "edge_ticks_total 100000")], type: .pub, to: telemetry, server: "metrics", as: .security(node), for: 2)
        #expect(ticks(await TestEnvironment.httpText(scrapeURL)) == later, "a new connection with the revoked key is refused")
        #expect(metricsLog().contains("is not in the allow-list"), "\(metricsLog().suffix(2000))")
        // The nodes on role keys were never refused, and the worker is still there.
        for name in ["storecast-ingest", "storecast-packager"] {
            let log = stack.service(name)?.log ?? ""
            #expect(!log.contains("ZeroMQ peer refused"), "\(name) refused a node of the cluster:\n\(log.suffix(2000))")
        }
        #expect(await TestEnvironment.httpGet("\(stack.playbackBase)/healthz")?.status == 200)
        _ = await stack.stop()
    }

    /// A stolen allowed key (a compromised node) still cannot write outside the data root,
    /// hijack another show, take every stream, or forge another process's metrics.
    @Test func anAllowedPeerIsStillUntrusted() async throws {
        let stack = try StorecastStack()
        let key = try await stack.provisionStream(tenant: "shop", stream: "live")
        let dvr = stack.logDirectory.appendingPathComponent("dvr").path
        try stack.start(packagerArguments: ["--dvr-window", "60", "--dvr-dir", dvr])
        try await stack.waitUntilReady()
        let publisher = try EndToEndTests.publisher(url: stack.rtmpURL(key: key), seconds: 40, logDirectory: stack.logDirectory, size: "426x240")
        defer { publisher.stop(grace: 1) }
        let master = "\(stack.playbackBase)/live/shop/live/master.m3u8"
        #expect(await StorecastStack.eventually(timeout: .seconds(20)) { await TestEnvironment.httpGet(master)?.status == 200 }, "the real show plays:\n\(stack.logs())")
        let (work, renditions, telemetry) = stack.zmqEndpoints

        // 1. Names that would be paths: refused where decoded; nothing written outside the DVR root.
        let escape = "storecast-escape-\(UUID().uuidString.prefix(8))"
        try await HostilePeer.send([[Self.announce(streamID: 77, tenant: "../../../../../../../../tmp/\(escape)", stream: "x")]], type: .push, to: renditions, server: "packager", as: .role(.transcoder), for: 2)
        // 2. Another stream id under the live show's name: refused, not merged.
        try await HostilePeer.send([[Self.announce(streamID: 987_654, tenant: "shop", stream: "live")]], type: .push, to: renditions, server: "packager", as: .role(.transcoder), for: 2)
        // 3. A worker claiming 65535 slots: believed 8 at most.
        try await HostilePeer.send([[Self.ready("rogue", capacity: 65535)]], type: .dealer, to: work, server: "ingest", as: .role(.transcoder), for: 2)
        // 4. Labels that would forge another process's samples.
        try await HostilePeer.send([Self.telemetry(service: "evil\"} 1\nstorecast_up{service=\"ingest\",node=\"forged", node: "n", exposition: "storecast_up{service=\"ingest\",node=\"forged2\"} 1\nok_total 1")],
                                   type: .pub, to: telemetry, server: "metrics", as: .role(.api), for: 3)

        #expect(!FileManager.default.fileExists(atPath: "/tmp/\(escape)"), "a name from the wire became a path outside the DVR root")
        let packagerLog = stack.service("storecast-packager")?.log ?? ""
        #expect(packagerLog.contains("tenant name is not a slug"), "the ../ name is refused at decode:\n\(packagerLog.suffix(3000))")
        #expect(packagerLog.contains("announce refused") && packagerLog.contains("shop/live is live here as stream"), "the hijack is refused:\n\(packagerLog.suffix(3000))")
        let ingestLog = stack.service("storecast-ingest")?.log ?? ""
        #expect(ingestLog.contains("capped") && ingestLog.contains("claimed=65535"), "the claimed capacity is capped:\n\(ingestLog.suffix(3000))")
        let scrape = await TestEnvironment.httpText("http://127.0.0.1:\(stack.metricsPort)/metrics")
        let lines = scrape.split(separator: "\n")
        #expect(!lines.contains { $0.hasPrefix("storecast_up{service=\"ingest\",node=\"forged") }, "a forged sample got through:\n\(scrape.prefix(3000))")
        #expect(scrape.contains(#"service="evil\"} 1\nstorecast_up{service=\"ingest\",node=\"forged""#), "the label value is escaped")
        #expect(scrape.contains("ok_total{service=\"evil"), "the peer's own samples are kept")

        // The real show was not disturbed: every rendition still advances, no ENDLIST.
        try await Self.expectEveryRenditionAdvances(of: "shop/live", on: stack)
        #expect(await TestEnvironment.httpGet("\(stack.playbackBase)/healthz")?.status == 200)
        _ = await stack.stop()
    }

    /// The packager takes a live stream's media only from the worker ingest leased it to (its
    /// lease ticket names the worker's own key): another allowed node, or a stolen role key,
    /// that knows the stream's id cannot push units into the show, end it, or claim it with an
    /// announce of its own.
    @Test func onlyTheLeaseHolderFeedsALiveShow() async throws {
        let keys = FileManager.default.temporaryDirectory.appendingPathComponent("storecast-lease-keys-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.copyItem(atPath: TestEnvironment.zmqKeys, toPath: keys)
        defer { try? FileManager.default.removeItem(atPath: keys) }
        let storecast = try TestEnvironment.binary("storecast")
        for node in ["edge-1", "rogue-9"] {
            let added = try await ServiceProcess.run(storecast, ["keys", keys, "--node", node, "--role", "transcoder"])
            #expect(added.status == 0, "\(added.output)")
        }
        let stack = try StorecastStack(zmqKeys: keys)
        let key = try await stack.provisionStream(tenant: "shop", stream: "live")
        // Tickets good for 4 s (renewed every second) and no clock skew allowed: the show below
        // outlives its first ticket many times over.
        try stack.start(packagerArguments: ["--lease-clock-skew", "0"], ingestArguments: ["--lease-ticket-validity", "4"],
                        workerEnvironment: ["storecast-transcoder": [ClusterKeys.nodeVariable: "edge-1"]])
        try await stack.waitUntilReady()
        let publisher = try EndToEndTests.publisher(url: stack.rtmpURL(key: key), seconds: 70, logDirectory: stack.logDirectory, size: "426x240")
        defer { publisher.stop(grace: 1) }
        let master = "\(stack.playbackBase)/live/shop/live/master.m3u8"
        #expect(await StorecastStack.eventually(timeout: .seconds(20)) { await TestEnvironment.httpGet(master)?.status == 200 }, "the real show plays:\n\(stack.logs())")
        let db = PostgresExecutor(conninfo: stack.database)
        defer { db.shutdown() }
        let id = try #require(Int64(try await db.execute("SELECT id FROM streams WHERE slug = 'live'").value(0, "id") ?? ""))
        let packagerLog = { stack.service("storecast-packager")?.log ?? "" }
        #expect(packagerLog().contains("stream's media now taken from its lease holder") && packagerLog().contains("holder=edge-1"), "the worker's node holds the lease:\n\(packagerLog().suffix(3000))")

        let renditions = stack.zmqEndpoints.renditions
        let units: [UInt8] = WireCodec.encode(.batch((0..<50).map { i in
            .accessUnit(AccessUnit(streamID: id, trackID: 1, flags: 1, sequence: UInt64(i), dts: Int64(i) * 3000, compositionOffset: 0, data: [0, 0, 0, 2, 0x65, 0x88])) }))
        let end = WireCodec.encode(.streamEnd(StreamEnd(streamID: id, reason: "forged end")))
        // Another node of the cluster, with its own allowed key: units and an end for the show.
        let rogue = try ClusterKeys.security(directory: keys, role: .transcoder, node: "rogue-9", logger: Logger(label: "rogue-9"))
        async let fromNode: Void = HostilePeer.send([[units], [end]], type: .push, to: renditions, server: "packager", as: .security(rogue), for: 3)
        // The transcoders' stolen role key: its own announce of the show (no lease ticket), units, an end.
        let role = try ClusterKeys.security(directory: keys, role: .transcoder, node: nil, logger: Logger(label: "stolen"))
        async let fromRole: Void = HostilePeer.send([[Self.announce(streamID: id, tenant: "shop", stream: "live")], [units], [end]], type: .push, to: renditions, server: "packager", as: .security(role), for: 3)
        _ = try await (fromNode, fromRole)

        #expect(packagerLog().contains("media refused: the sender does not hold this stream's lease") && packagerLog().contains("sender=rogue-9") && packagerLog().contains("sender=transcoder"),
                "the other senders' media is refused and logged:\n\(packagerLog().suffix(3000))")
        #expect(packagerLog().contains("announce refused") && packagerLog().contains("lease ticket is missing"), "the announce without a ticket is refused:\n\(packagerLog().suffix(3000))")
        #expect(!packagerLog().contains("forged end"), "the forged end ended the show:\n\(packagerLog().suffix(3000))")
        let scrape = await TestEnvironment.httpText("http://127.0.0.1:\(stack.metricsPort)/metrics")
        let refused = scrape.split(separator: "\n").first { $0.hasPrefix("storecast_packager_media_refused_total{") }.flatMap { $0.split(separator: " ").last.flatMap { Double($0) } }
        #expect((refused ?? 0) >= 2, "refusals are counted: \(refused.map { "\($0)" } ?? "none")")

        // The show goes on: every rendition advances, none has ENDLIST.
        try await Self.expectEveryRenditionAdvances(of: "shop/live", on: stack)

        // A ticket that lapsed claims nothing, even for a later session (before tickets expired,
        // this took the show over): rogue-9 once held a lease whose ticket it kept.
        let leaseKey = try ClusterKeys.leaseKey(option: keys, role: .ingest)
        let past = LeaseTicketKey.milliseconds(Date()) - 10_000
        let lapsed = leaseKey.ticket(streamID: id, sessionID: 1 << 40, tenant: "shop", stream: "live", worker: "rogue-9", grantedAt: past, expiresAt: past + 4000)
        try await HostilePeer.send([[Self.announce(streamID: id, tenant: "shop", stream: "live", session: 1 << 40, ticket: lapsed)]],
                                   type: .push, to: renditions, server: "packager", as: .security(rogue), for: 2)
        #expect(packagerLog().contains("lease ticket expired"), "the lapsed ticket is refused:\n\(packagerLog().suffix(3000))")
        #expect(!packagerLog().contains("holder=rogue-9"), "the lapsed ticket took the show over:\n\(packagerLog().suffix(3000))")
        try await Self.expectEveryRenditionAdvances(of: "shop/live", on: stack)

        // A packager that restarts knows no holder: the worker's next announce carries the ticket
        // ingest renewed (the assign's lapsed long ago), and the show plays on.
        stack.service("storecast-packager")?.kill()
        try await Task.sleep(for: .milliseconds(500))
        try stack.restart("storecast-packager")
        let restartedLog = { stack.service("storecast-packager-run2")?.log ?? "" }
        #expect(await StorecastStack.eventually(timeout: .seconds(15)) { restartedLog().contains("holder=edge-1") },
                "the restarted packager takes the holder's renewed ticket:\n\(restartedLog().suffix(3000))")
        #expect(!restartedLog().contains("announce refused"), "\(restartedLog().suffix(3000))")
        #expect(await StorecastStack.eventually(timeout: .seconds(15)) { await TestEnvironment.httpGet(master)?.status == 200 })
        try await Self.expectEveryRenditionAdvances(of: "shop/live", on: stack)
        _ = await stack.stop()
    }

    /// Every rendition of `show` (`tenant/stream`) lists a later segment 5 s on, and none has ENDLIST.
    static func expectEveryRenditionAdvances(of show: String, on stack: StorecastStack) async throws {
        let master = await TestEnvironment.httpText("\(stack.playbackBase)/live/\(show)/master.m3u8")
        let variants = EndToEndTests.variants(master)
        #expect(!variants.isEmpty, "\(master)")
        var sequences: [String: Int] = [:]
        for v in variants { sequences[v.uri] = lastSequence(await TestEnvironment.httpText("\(stack.playbackBase)/live/\(show)/\(v.uri)")) }
        try await Task.sleep(for: .seconds(5))
        for v in variants {
            let text = await TestEnvironment.httpText("\(stack.playbackBase)/live/\(show)/\(v.uri)")
            #expect(!text.contains("#EXT-X-ENDLIST"), "\(v.uri) ended while live")
            #expect(lastSequence(text) > sequences[v.uri] ?? Int.max, "\(v.uri) still advances")
        }
    }

    static func lastSequence(_ playlist: String) -> Int {
        let media = playlist.firstMatch(of: /#EXT-X-MEDIA-SEQUENCE:(\d+)/).flatMap { Int($0.1) } ?? -1
        return media + playlist.components(separatedBy: "#EXTINF").count - 1
    }

    /// A budget on every connection: HTTP slowloris and idle keep-alive closed, a per-IP cap,
    /// RTMP handshake and publish deadlines, and no big partial message before publish.
    @Test func everyConnectionHasADeadlineAndABudget() async throws {
        let stack = try StorecastStack()
        _ = try await stack.provisionStream(tenant: "shop", stream: "live")
        try stack.start(packagerArguments: ["--http-idle-timeout", "3", "--http-max-connections-per-ip", "12"],
                        ingestArguments: ["--rtmp-handshake-timeout", "2", "--rtmp-publish-timeout", "4", "--rtmp-max-connections-per-ip", "12"])
        try await stack.waitUntilReady()

        // HTTP: headers trickled and never finished, and an idle keep-alive connection.
        let slow = try HostilePeer.Connection(port: stack.httpPort)
        slow.write(Array("GET /healthz HTTP/1.1\r\nHost: x\r\n".utf8))
        let idle = try HostilePeer.Connection(port: stack.httpPort)
        idle.write(Array("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        #expect(String(decoding: idle.read(12, within: 2), as: UTF8.self).hasPrefix("HTTP/1.1 200"), "the keep-alive request is answered")
        #expect(await TestEnvironment.httpGet("\(stack.playbackBase)/healthz")?.status == 200, "others are served meanwhile")
        #expect(slow.closedByServer(within: 6), "a half-sent request is closed after the header deadline")
        #expect(idle.closedByServer(within: 6), "an idle keep-alive connection is closed")

        // Per-IP cap: 12 open; the 13th is closed at once; freed slots serve again. (First the
        // test's own keep-alive connection from URLSession goes, closed by the idle deadline.)
        try await Task.sleep(for: .seconds(4))
        var held = try (0..<12).map { _ in try HostilePeer.Connection(port: stack.httpPort) }
        // The server's event loops take connections in parallel: let these 12 be counted first.
        try await Task.sleep(for: .milliseconds(500))
        let extra = try HostilePeer.Connection(port: stack.httpPort)
        #expect(extra.closedByServer(within: 1), "the 13th connection from one address is refused:\n\(stack.service("storecast-packager")?.log.suffix(2000) ?? "")")
        #expect(!held[11].closedByServer(within: 0.3), "the 12 within the cap stay open (until their idle deadline)")
        held.removeAll()
        #expect(await StorecastStack.eventually(timeout: .seconds(3)) { await TestEnvironment.httpGet("\(stack.playbackBase)/healthz")?.status == 200 })
        _ = held

        // RTMP: one byte and nothing more; a finished handshake and no publish.
        let oneByte = try HostilePeer.Connection(port: stack.rtmpPort)
        oneByte.write([3])
        let silent = try HostilePeer.Connection(port: stack.rtmpPort)
        silent.write([3] + [UInt8](repeating: 0, count: 1536))
        let s0s1s2 = silent.read(1 + 1536 * 2, within: 3)
        #expect(s0s1s2.count == 3073, "the server answers the handshake")
        silent.write(Array(s0s1s2[1..<1537]))  // C2 echoes S1
        #expect(oneByte.closedByServer(within: 5), "an unfinished handshake is closed after its deadline")
        #expect(silent.closedByServer(within: 7), "a connection that never publishes is closed after the publish deadline")

        // Before publish, a chunk header announcing an 8 MiB message closes the connection at
        // once (it held up to 64 partial messages of 8 MiB each).
        let greedy = try HostilePeer.Connection(port: stack.rtmpPort)
        greedy.write([3] + [UInt8](repeating: 0, count: 1536))
        let answer = greedy.read(3073, within: 3)
        greedy.write(Array(answer[1..<1537]))
        greedy.write([0x03, 0, 0, 0, 0x80, 0x00, 0x00, 0x09, 1, 0, 0, 0] + [UInt8](repeating: 0x17, count: 100))
        #expect(greedy.closedByServer(within: 1), "an oversized message before publish closes the connection")

        let ingestLog = stack.service("storecast-ingest")?.log ?? ""
        #expect(ingestLog.contains("limit=handshake_timeout") && ingestLog.contains("limit=publish_timeout"), "the limits that fired are logged:\n\(ingestLog.suffix(3000))")
        _ = await stack.stop()
    }

    /// The control API has no open mode, and refuses a placeholder token at start.
    @Test func theControlAPIIsClosedByDefault() async throws {
        let api = try TestEnvironment.binary("storecast-api")
        let common = ["--database", "postgresql://127.0.0.1:1/none", "--http-port", "\(try TestEnvironment.freePort())", "--zmq-keys", TestEnvironment.zmqKeys]
        for (token, reason) in [(nil, "needs an admin token"), ("change-me", "known placeholder"), ("short-token", "fewer than 24")] as [(String?, String)] {
            let (status, output) = try await ServiceProcess.run(api, common + (token.map { ["--admin-token", $0] } ?? []), timeout: 10)
            #expect(status != 0 && output.contains(reason), "token \(token ?? "none"): \(status) \(output)")
        }
        let stack = try StorecastStack()
        _ = try await stack.provisionStream(tenant: "shop", stream: "live")
        try stack.start(apiArguments: ["--http-idle-timeout", "2"])
        try await stack.waitUntilReady()
        let url = "http://127.0.0.1:\(stack.apiPort)/v1/streams"
        #expect(await TestEnvironment.http("GET", url, token: nil)?.status == 401)
        #expect(await TestEnvironment.http("GET", url, token: "wrong-token-wrong-token-wrong")?.status == 401)
        #expect(await TestEnvironment.http("GET", url)?.status == 200)
        // Its server can upgrade to WebSocket (a stream's events), whose first request has its
        // own header deadline: a slowloris there is closed too, also one asking for an upgrade.
        for head in ["GET /v1/streams HTTP/1.1\r\nHost: x\r\n", "GET /v1/tenants/shop/streams/live/events HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"] {
            let slow = try HostilePeer.Connection(port: stack.apiPort)
            slow.write(Array(head.utf8))
            #expect(slow.closedByServer(within: 5), "a half-sent request to the API is closed after the header deadline: \(head)")
        }
        _ = await stack.stop()
    }
}
