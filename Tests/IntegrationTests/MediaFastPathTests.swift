import Crypto
import Foundation
import StorecastRuntime
import Testing

/// The origin's hot path (issue 18): media already in memory is answered below Hummingbird's
/// router, on the connection's event loop (`HTTP1MediaFastPath` on a plain HTTP/1.1 connection's
/// bytes, `MediaFastPath` for what reaches the server's parser and in each HTTP/2 stream). From outside it must be the same
/// origin: the same status, bytes and headers as the router gives (the router answers the same
/// URL with a query), 304 on a matching ETag, requests pipelined on one connection answered in
/// order whichever path takes each, and the answers counted.
@Suite(.serialized) struct MediaFastPathTests {
    @Test func theHotPathAnswersAsTheRouterDoesAndInOrder() async throws {
        let (stack, publisher, variant, part) = try await Self.liveShow("hot")
        defer { publisher.stop(grace: 1) }
        let base = "\(stack.playbackBase)/live/shop/hot/\(variant)"

        for file in ["init.mp4", part] {
            // The router's answer first: it reads the playback access, which the hot path then
            // finds cached (it never waits on the database itself).
            let routed = try #require(await TestEnvironment.httpExchange("\(base)/\(file)?via=router"))
            let hot = try #require(await TestEnvironment.httpExchange("\(base)/\(file)"))
            #expect(hot.status == 200 && routed.status == 200, "\(file): \(hot.status) and \(routed.status)")
            #expect(hot.body == routed.body && !hot.body.isEmpty, "\(file): the same bytes (\(hot.body.count) and \(routed.body.count))")
            #expect(hot.headers.filter { $0.key != "date" } == routed.headers.filter { $0.key != "date" }, "\(file): the same headers:\n\(hot.headers)\n\(routed.headers)")
            let etag = try #require(hot.headers["etag"])
            let hotCached = try #require(await TestEnvironment.httpExchange("\(base)/\(file)", headers: ["If-None-Match": etag]))
            let routedCached = try #require(await TestEnvironment.httpExchange("\(base)/\(file)?via=router", headers: ["If-None-Match": etag]))
            #expect(hotCached.status == 304 && routedCached.status == 304 && hotCached.body.isEmpty, "\(file): \(hotCached.status) \(routedCached.status)")
            #expect(hotCached.headers.filter { $0.key != "date" } == routedCached.headers.filter { $0.key != "date" }, "\(file): the same 304:\n\(hotCached.headers)\n\(routedCached.headers)")
        }

        // HEAD (a CDN's or a probe's) gets what GET gets, without the body: the playlists, the
        // media the hot path serves, and the preview. A part that does not exist is a 404 either way.
        // The media playlist and the preview change while the show is live (a new part, a new
        // still): there the version and the length may differ between the two requests.
        let stream = "\(stack.playbackBase)/live/shop/hot"
        for url in ["\(stream)/master.m3u8", "\(base)/index.m3u8", "\(base)/init.mp4", "\(base)/\(part)", "\(stream)/thumbnail.jpg", "\(base)/part-999999.0.m4s"] {
            let changing = url.hasSuffix("index.m3u8") || url.hasSuffix("thumbnail.jpg")
            let compared: ([String: String]) -> [String: String] = { $0.filter { !["date"].contains($0.key) && !(changing && ["etag", "content-length"].contains($0.key)) } }
            let get = try #require(await TestEnvironment.httpExchange(url))
            let head = try #require(await TestEnvironment.httpExchange(url, method: "HEAD"))
            #expect(head.status == get.status && head.body.isEmpty, "HEAD \(url): \(head.status) with \(head.body.count) bytes, GET \(get.status)")
            #expect(compared(head.headers) == compared(get.headers), "HEAD \(url): the GET's header fields:\n\(head.headers)\n\(get.headers)")
            // (URLSession undoes a playlist's gzip: then the GET's length on the wire is its field's.)
            let wireLength = get.headers["content-encoding"] == nil ? "\(get.body.count)" : get.headers["content-length"]
            if get.status == 200 && !changing { #expect(head.headers["content-length"] == wireLength, "HEAD \(url): the GET body's length: \(head.headers)") }
            if changing { #expect(Int(head.headers["content-length"] ?? "") ?? 0 > 0 && (head.headers["etag"] != nil) == (get.headers["etag"] != nil), "HEAD \(url): a length, and a version where GET has one: \(head.headers)") }
        }
        #expect(try #require(await TestEnvironment.httpExchange("\(base)/part-999999.0.m4s", method: "HEAD")).status == 404)
        // The part the playlist's preload hint names is still being made: its GET streams it
        // without a length, so its HEAD answers at once without one (not a length of 0). A
        // part lasts a third of a second, so on a loaded machine it may be done by the time
        // the HEAD arrives: then it must be a listed part, answered with its length, and the
        // next hint is tried (at most 8).
        var caughtInProgress = false
        for _ in 0..<8 where !caughtInProgress {
            let playlist = await TestEnvironment.httpText("\(base)/index.m3u8")
            let hinted = try #require(playlist.firstMatch(of: /#EXT-X-PRELOAD-HINT:TYPE=PART,URI="([^"]+)"/).map { String($0.1) }, "\(playlist)")
            let hintHead = try #require(await TestEnvironment.httpExchange("\(base)/\(hinted)", method: "HEAD", timeout: 5))
            #expect(hintHead.status == 200 && hintHead.body.isEmpty && hintHead.headers["content-type"] == "video/iso.segment",
                    "HEAD of the hinted part \(hinted): \(hintHead.status) \(hintHead.headers)")
            if hintHead.headers["content-length"] == nil { caughtInProgress = true; continue }
            let now = await TestEnvironment.httpText("\(base)/index.m3u8")
            #expect(now.contains("URI=\"\(hinted)\"") && !now.contains("PRELOAD-HINT:TYPE=PART,URI=\"\(hinted)\""),
                    "HEAD of \(hinted) had a length, so it must be a finished part by now:\n\(now)")
        }
        #expect(caughtInProgress, "no HEAD of a hinted part arrived while it was being made (8 tries)")

        // Pipelined on one connection: a playlist (the router's), a part and the init segment
        // (the hot path's), a part through the router, the init segment again: answers in order.
        let prefix = URL(string: base)!.path
        let files = ["index.m3u8", part, "init.mp4", "\(part)?via=router", "init.mp4"]
        let requests = files.enumerated().map { i, f in
            "GET \(prefix)/\(f) HTTP/1.1\r\nHost: 127.0.0.1\r\n\(i == files.count - 1 ? "Connection: close\r\n" : "")\r\n"
        }.joined()
        let connection = try HostilePeer.Connection(port: stack.httpPort)
        connection.write(Array(requests.utf8))
        let answers = Self.responses(connection.read(4 << 20, within: 10))
        #expect(answers.map(\.type) == ["application/vnd.apple.mpegurl", "video/iso.segment", "video/mp4", "video/iso.segment", "video/mp4"], "in the order asked: \(answers.map(\.type))")
        #expect(answers.map(\.status) == [200, 200, 200, 200, 200], "\(answers.map(\.status))")

        // Counted by the packager and reported through the collector.
        let answered = await Self.hotPathAnswers(stack, reaching: 4)
        #expect(answered >= 4, "the hot path's answers are counted: \(answered)")
        _ = await stack.stop()
    }

    /// On a plain HTTP/1.1 connection, media is answered on the wire, before the server's parser
    /// (`HTTP1MediaFastPath`), so the connection's idle deadline is the origin's own
    /// (`HTTP1IdleDeadline`): answers on the wire keep a connection alive past the deadline, as the
    /// router's answers do; an idle connection, and one that trickles its next request's head
    /// after an answer on the wire, are closed at the deadline all the same.
    @Test func answersOnTheWireKeepAConnectionAliveAndTheIdleDeadlineHolds() async throws {
        let (stack, publisher, variant, _) = try await Self.liveShow("wire", packagerArguments: ["--http-idle-timeout", "3"])
        defer { publisher.stop(grace: 1) }
        // The hot path answers a stream whose playback access is cached (10 s); the router reads
        // it, so each phase below starts with one request through the router.
        let viaRouter = "\(stack.playbackBase)/live/shop/wire/\(variant)/init.mp4?via=router"
        _ = await TestEnvironment.httpExchange(viaRouter)
        // The init segment: in memory for the whole show (a part leaves memory after a few segments).
        let request = Array("GET /live/shop/wire/\(variant)/init.mp4 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)

        // 8 answers over about 8 s on one connection, with a 3 s deadline.
        let busy = try HostilePeer.Connection(port: stack.httpPort)
        var statuses: [Int] = []
        for i in 0..<8 {
            if i == 4 { _ = await TestEnvironment.httpExchange(viaRouter) }  // on its own connection
            busy.write(request)
            statuses += Self.responses(busy.read(1 << 20, within: 0.8)).map(\.status)
            try await Task.sleep(for: .milliseconds(200))
        }
        #expect(statuses == Array(repeating: 200, count: 8), "every request answered on the one connection: \(statuses)")
        #expect(busy.closedByServer(within: 6), "once idle, the connection is closed at the deadline")

        // One answer on the wire, then the next request's head trickled a byte every 0.4 s.
        _ = await TestEnvironment.httpExchange(viaRouter)
        let slow = try HostilePeer.Connection(port: stack.httpPort)
        slow.write(request)
        #expect(Self.responses(slow.read(1 << 20, within: 0.8)).map(\.status) == [200])
        var closed = false
        for byte in Array("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: aaaaaaaaaa".utf8) where !closed {
            slow.write([byte])
            closed = slow.closedByServer(within: 0.4)
        }
        #expect(closed, "a trickled head after an answer on the wire is closed at the idle deadline")

        let answered = await Self.hotPathAnswers(stack, reaching: 9)
        #expect(answered == 9, "the 9 answers on the wire are counted: \(answered)")
        _ = await stack.stop()
    }

    /// A client that pipelines requests for media and never reads an answer: the hot path on
    /// the wire stops answering, and reading, while the connection cannot take more bytes, so the
    /// packager holds about the socket's buffers for it, not every answer asked for (200,000
    /// segments here; their requests, 15 MB, are more than the kernel's buffers hold), and serves
    /// everyone else meanwhile.
    @Test func aClientThatNeverReadsIsNotAnsweredIntoMemory() async throws {
        let (stack, publisher, variant, part) = try await Self.liveShow("greedy")
        defer { publisher.stop(grace: 1) }
        let base = "\(stack.playbackBase)/live/shop/greedy/\(variant)"
        let playlist = await TestEnvironment.httpText("\(base)/index.m3u8")
        let segment = try #require(playlist.matches(of: /\n(seg-[0-9]+\.m4s)\n/).last.map { String($0.1) }, "\(playlist)")
        let size = try #require(await TestEnvironment.httpExchange("\(base)/\(segment)?via=router")).body.count  // caches the playback access
        let packager = try #require(stack.service("storecast-packager"))

        let request = Array("GET \(URL(string: base)!.path)/\(segment) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)
        let asked = Array(repeating: request, count: 200_000).flatMap { $0 }
        // Twice: answered on the wire; then after a first request the wire reader does not follow
        // (the same GET with a chunked, empty body), where the hot path in front of the router
        // answers them all.
        let unfollowable = "GET \(URL(string: base)!.path)/\(segment) HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
        for (path, first) in [("on the wire", ""), ("in front of the router", unfollowable)] {
            let before = FaultMatrixTests.residentMiB(packager)
            let greedy = try HostilePeer.Connection(port: stack.httpPort)
            let sent = greedy.send(Array(first.utf8) + asked, within: 5)
            try await Task.sleep(for: .seconds(1))
            let grown = FaultMatrixTests.residentMiB(packager) - before
            #expect(sent < asked.count, "\(path): the packager stopped reading a client that does not read (it took \(sent) of \(asked.count) bytes of requests)")
            #expect(grown < 64, "\(path): the packager grew \(grown) MiB for a client that asked for \(200_000 * size / 1_048_576) MiB and read nothing")
            _ = await TestEnvironment.httpExchange("\(base)/\(segment)?via=router")  // the playback access, cached again
            let other = try #require(await TestEnvironment.httpExchange("\(base)/\(part)", timeout: 5))
            #expect(other.status == 200, "\(path): another player is served meanwhile: \(other.status)")
            // Once it reads, it gets its answers, in order.
            let answers = Self.responses(greedy.read(8 << 20, within: 2))
            #expect(answers.count > 10 && answers.allSatisfy { $0.status == 200 && $0.type == "video/iso.segment" }, "\(path): \(answers.count) answers once it reads")
        }
        _ = await stack.stop()
    }

    /// Over TLS, HTTP/2 has the hot path too, answered as frames on the connection
    /// (`HTTP2MediaFrames`): a part or init segment asked for over HTTP/2 gets the router's status,
    /// bytes and headers (a 304 too), and is counted as the hot path's. HTTP/1.1 over TLS (a
    /// client without h2 in ALPN) is left to the router, with keep-alive intact: the counter
    /// counts exactly the HTTP/2 answers. Then clients no browser is (`Tests/Tools/h2_client.py`):
    /// one that opens no flow-control window and asks for a segment 60 times at once gets at most
    /// about 1 MiB of answers held for it by the hot path (the rest wait in the router's tasks) and,
    /// once it opens its windows, every answer whole; one that resets a stream at once and sends a
    /// window update on it keeps its connection and gets its next answers, and so does one whose
    /// request is malformed (only its stream is reset); an idle connection gets
    /// GOAWAY at the idle deadline, and is closed within the grace after it though the client
    /// never acknowledges the PING that follows (NIO's connection manager would wait for ever).
    /// And the connections NIO's manager alone would leave open are closed: answers held for a
    /// client that never opens its window (at the idle deadline), a connection that opens no
    /// stream (at the idle deadline), one whose client closes its side, and one that floods PINGs
    /// (after NIO's GOAWAY).
    @Test func eachHTTP2StreamHasTheHotPath() async throws {
        let stack = try StorecastStack()
        let key = try await stack.provisionStream(tenant: "shop", stream: "hot2")
        let pair = try SelfSignedCertificate.ensure(in: stack.logDirectory.appendingPathComponent("tls").path)
        let httpsPort = try TestEnvironment.freePort()
        try stack.start(packagerArguments: ["--https-port", "\(httpsPort)", "--tls-certificate", pair.certificate, "--tls-key", pair.key, "--http-idle-timeout", "3"])
        try await stack.waitUntilReady()
        let publisher = try EndToEndTests.publisher(url: stack.rtmpURL(key: key), seconds: 40, logDirectory: stack.logDirectory, size: "426x240")
        defer { publisher.stop(grace: 1) }
        let (variant, part) = try await Self.livePart(stack, stream: "hot2")
        let base = "https://127.0.0.1:\(httpsPort)/live/shop/hot2/\(variant)"
        let curl = try TestEnvironment.which("curl")
        let scratch = stack.logDirectory.appendingPathComponent("h2-bodies")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        /// Status line and header fields (lowercased, without date) and the body, as curl got them.
        func fetch(_ flag: String, _ file: String, _ extra: [String] = []) async throws -> (head: [String], body: Data) {
            let bodyFile = scratch.appendingPathComponent(UUID().uuidString).path
            let (status, output) = try await ServiceProcess.run(curl, ["-sk", flag, "-D", "-", "-o", bodyFile] + extra + ["\(base)/\(file)"])
            #expect(status == 0, "curl \(flag) \(file): \(output)")
            let head = output.split(separator: "\r\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.lowercased().hasPrefix("date:") }
            return (head.map { $0.lowercased() }, (try? Data(contentsOf: URL(fileURLWithPath: bodyFile))) ?? Data())
        }
        var hotAnswers = 0
        for file in ["init.mp4", part] {
            let routed = try await fetch("--http2", "\(file)?via=router")  // caches the playback access
            let hot = try await fetch("--http2", file)
            hotAnswers += 1
            #expect(hot.head.first == "http/2 200" && routed.head.first == "http/2 200", "\(file): \(hot.head) \(routed.head)")
            #expect(hot.body == routed.body && !hot.body.isEmpty, "\(file): the same bytes (\(hot.body.count) and \(routed.body.count))")
            #expect(hot.head.sorted() == routed.head.sorted(), "\(file): the same headers:\n\(hot.head)\n\(routed.head)")
            let etag = try #require(hot.head.first { $0.hasPrefix("etag:") }.map { String($0.dropFirst(5)).trimmingCharacters(in: .whitespaces) }, "\(hot.head)")
            let hotCached = try await fetch("--http2", file, ["-H", "If-None-Match: \(etag)"])
            let routedCached = try await fetch("--http2", "\(file)?via=router", ["-H", "If-None-Match: \(etag)"])
            hotAnswers += 1
            // The router's 304 over HTTP/2 says `content-length: 0` (Hummingbird's, for its empty
            // body), which RFC 9110 8.6 does not allow a 304 (its length must be the 200's); the
            // hot path sends none, as the router does over HTTP/1.1.
            #expect(hotCached.head.first == "http/2 304" && hotCached.body.isEmpty && !hotCached.head.contains { $0.hasPrefix("content-length:") }
                    && hotCached.head.sorted() == routedCached.head.filter { $0 != "content-length: 0" }.sorted(),
                    "\(file): the router's 304:\n\(hotCached.head)\n\(routedCached.head)")
        }
        // HTTP/1.1 over TLS: the same part twice on one kept-alive connection, from the router.
        let (status, output) = try await ServiceProcess.run(curl, ["-sk", "--http1.1", "-o", "/dev/null", "-o", "/dev/null", "-w", "%{http_version} %{http_code} %{num_connects}\n", "\(base)/\(part)", "\(base)/\(part)"])
        #expect(status == 0 && output.split(separator: "\n") == ["1.1 200 1", "1.1 200 0"], "HTTP/1.1 over TLS, the connection kept alive: \(output)")

        let answered = await Self.hotPathAnswers(stack, reaching: Double(hotAnswers))
        #expect(answered == Double(hotAnswers), "the hot path answered the \(hotAnswers) HTTP/2 requests and nothing over HTTP/1.1: \(answered)")

        // A client that opens no window: a segment (tens of KB) asked for 60 times at once.
        let python = try TestEnvironment.testTool("venv/bin/python")
        let client = TestEnvironment.repositoryRoot.appendingPathComponent("Tests/Tools/h2_client.py").path
        func h2Client(_ scenario: String, _ files: [String]) async throws -> [String: Any] {
            let paths = files.map { URL(string: "\(base)/\($0)")!.path + (URL(string: "\(base)/\($0)")!.query.map { "?\($0)" } ?? "") }
            let (status, output) = try await ServiceProcess.run(python, [client, "127.0.0.1", "\(httpsPort)", scenario] + paths, timeout: 60)
            #expect(status == 0, "h2_client \(scenario): \(output)")
            return try #require(output.split(separator: "\n").last.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }, "\(scenario): \(output)")
        }
        let playlist = await TestEnvironment.httpText("\(stack.playbackBase)/live/shop/hot2/\(variant)/index.m3u8")
        let segment = try #require(playlist.matches(of: /\n(seg-[0-9]+\.m4s)\n/).last.map { String($0.1) }, "\(playlist)")
        let whole = try await fetch("--http2", "\(segment)?via=router")
        let digest = SHA256.hash(data: whole.body).map { String(format: "%02x", $0) }.joined()
        let closed = try await h2Client("closed-window", Array(repeating: segment, count: 60))
        let answers = closed["answers"] as? [[String: Any]] ?? []
        #expect(closed["bodyBeforeWindow"] as? Int == 0, "no body byte before the client opens a window: \(closed["bodyBeforeWindow"] ?? "-")")
        #expect(answers.count == 60 && answers.allSatisfy { $0["status"] as? Int == 200 && $0["sha256"] as? String == digest && $0["ended"] as? Bool == true },
                "every answer whole once the windows open (\(whole.body.count) bytes each): \(answers.filter { $0["sha256"] as? String != digest }.prefix(3))")
        let afterClosed = await Self.hotPathAnswers(stack, reaching: answered + 60, within: .seconds(6))
        let heldHere = afterClosed - answered
        print("MediaFastPathTests: of 60 answers of \(whole.body.count) bytes to a client with no window, the frame path took \(Int(heldHere))")
        #expect(heldHere >= 1 && heldHere * Double(whole.body.count) <= Double((1 << 20) + whole.body.count),
                "the frame path holds at most 1 MiB of answers for a client with no window, the rest go to the router: \(heldHere) of 60")

        // A client that reads: 2 MiB and more of answers on one connection, one after another,
        // all from the frame path (the bytes it holds are let go as each answer's stream closes).
        // The playback access is cached again first (it is kept 10 s; see the stalled client below).
        _ = try await fetch("--http2", "\(segment)?via=router")
        let beforeOneByOne = await Self.hotPathAnswers(stack, reaching: afterClosed)
        let count = (2 << 20) / max(1, whole.body.count) + 2
        let oneByOne = try await h2Client("one-by-one", Array(repeating: segment, count: count))
        let inTurn = oneByOne["answers"] as? [[String: Any]] ?? []
        #expect(inTurn.count == count && inTurn.allSatisfy { $0["status"] as? Int == 200 && $0["sha256"] as? String == digest } && oneByOne["goaway"] is NSNull,
                "\(count) answers in turn on one connection, each whole: \(inTurn.filter { $0["sha256"] as? String != digest }.prefix(3))")
        let afterOneByOne = await Self.hotPathAnswers(stack, reaching: beforeOneByOne + Double(count), within: .seconds(6))
        #expect(afterOneByOne - beforeOneByOne == Double(count),
                "the frame path answered all \(count) (\(count * whole.body.count) bytes) of a client that reads: \(afterOneByOne - beforeOneByOne)")

        // A stream reset at once, a window update on it, then two more requests on the connection.
        let reset = try await h2Client("reset-early", [part, part, "init.mp4"])
        let resetAnswers = reset["answers"] as? [[String: Any]] ?? []
        #expect(resetAnswers.count == 3 && resetAnswers.allSatisfy { $0["status"] as? Int == 200 && ($0["length"] as? Int ?? 0) > 0 } && reset["goaway"] is NSNull,
                "the connection holds after a reset stream: \(reset)")

        // A malformed request (a `connection` field, which HTTP/2 forbids) resets its own stream;
        // the connection goes on serving (another player's answers share it).
        let malformed = try await h2Client("malformed", [part, "init.mp4"])
        #expect(malformed["malformedStatus"] is NSNull && malformed["goaway"] is NSNull
                && (malformed["answers"] as? [[String: Any]] ?? []).map { $0["status"] as? Int } == [200, 200],
                "a malformed request resets its stream only: \(malformed)\n\(stack.service("storecast-packager")?.log.suffix(3000) ?? "")")

        // Idle: GOAWAY at the 3 s deadline, then closed within the grace (7 s: NIO's 5 s and a
        // margin; this client ignores the PING after the GOAWAY).
        let idle = try await h2Client("idle", [part])
        let goawayAfter = idle["goawayAfter"] as? Double ?? -1
        #expect((idle["answers"] as? [[String: Any]])?.first?["status"] as? Int == 200 && goawayAfter >= 2 && goawayAfter <= 8
                && (idle["closedAfter"] as? Double).map { $0 - goawayAfter <= 10 } == true,
                "an idle HTTP/2 connection gets GOAWAY at the idle deadline and is closed: \(idle)")

        // Answers held for a window that never opens: the connection closes at the 3 s deadline.
        // The hot path's answers: the playback access is cached again first (it is kept 10 s,
        // which the scenarios above can outlast on a busy machine; the router's answers are
        // closed by another way, each stream's idle deadline, then the connection's GOAWAY and
        // its grace, about 13 s in all).
        _ = try await fetch("--http2", "\(segment)?via=router")
        let stalled = try await h2Client("stalled", Array(repeating: segment, count: 20))
        #expect((stalled["closedAfter"] as? Double).map { $0 >= 2 && $0 <= 10 } == true, "a client that never opens its window is closed: \(stalled)")
        // A client that opens wide windows, asks for 200 segments from the router (5.6 MB, past
        // what the sockets hold) and reads nothing: its streams' idle timers reset them, and the
        // GOAWAY that follows waits for the connection to drain. The connection is closed 3 s
        // after it stopped taking bytes (then swift-nio-ssl waits up to 5 s for the client's
        // close_notify), so the answers stay cut short.
        _ = try await fetch("--http2", "\(segment)?via=router")
        let refusedBefore = await Self.sendDeadlineCloses(stack)
        let unread = try await h2Client("unread", Array(repeating: "\(segment)?via=router", count: 200))
        let unreadAnswers = unread["answers"] as? [[String: Any]] ?? []
        let wholeUnread = unreadAnswers.filter { $0["sha256"] as? String == digest }.count
        let refusedAfter = await Self.sendDeadlineCloses(stack, above: refusedBefore)
        print("MediaFastPathTests: a client that reads nothing got \(wholeUnread) of 200 answers whole (closed: \(unread["closed"] ?? "?")); send deadline closes \(refusedBefore) -> \(refusedAfter)")
        #expect(unread["closed"] as? Bool == true && wholeUnread < 200 && refusedAfter > refusedBefore,
                "a connection whose client reads nothing is closed at the idle deadline, not held: \(wholeUnread) of 250 whole, closed \(unread["closed"] ?? "?"), send deadline closes \(refusedBefore) -> \(refusedAfter)")

        // No stream at all: closed at the 3 s deadline. A client that closes its side (a TCP FIN,
        // no TLS close_notify): closed at once, which swift-nio-ssl carries out after waiting up
        // to 5 s for the client's close_notify.
        let silent = try await h2Client("silent", [part])
        #expect((silent["closedAfter"] as? Double).map { $0 >= 2 && $0 <= 6 } == true, "a connection that opens no stream is closed at the idle deadline: \(silent)")
        let halfClosed = try await h2Client("half-close", [part])
        #expect((halfClosed["closedAfter"] as? Double).map { $0 <= 7 } == true, "a connection whose client closed its side is closed: \(halfClosed)")
        // 1,000 PINGs at once after a request: NIO's flood limit (GOAWAY ENHANCE_YOUR_CALM, 0xb),
        // then closed at once (the idle deadline would take 3 s).
        let flood = try await h2Client("ping-flood", [part])
        #expect(flood["goaway"] as? Int == 0xb && (flood["closedAfter"] as? Double).map { $0 <= 2 } == true, "a PING flood gets GOAWAY and the connection is closed: \(flood)")
        _ = await stack.stop()
    }

    /// How many connections the packager's HTTPS listener closed at its send deadline (a client
    /// that reads nothing), read until it is above `above` (5 s), or at once without it.
    static func sendDeadlineCloses(_ stack: StorecastStack, above: Double? = nil) async -> Double {
        await collected(stack, "storecast_connections_refused_total", labelled: "reason=\"send_deadline\"", within: above == nil ? .zero : .seconds(5)) { closes in
            above.map { closes > $0 } ?? true
        }
    }

    /// The packager's count of hot-path answers, read until it reaches `count` (`timeout`, 15 s
    /// unless given).
    static func hotPathAnswers(_ stack: StorecastStack, reaching count: Double, within timeout: Duration = .seconds(15)) async -> Double {
        await collected(stack, "storecast_packager_fast_path_answers_total", within: timeout) { $0 >= count }
    }

    /// The sum of the collector's samples of `metric` (those whose labels hold `label`, if given),
    /// read until `enough` holds of it or `timeout` passes; -1 when the collector has none.
    static func collected(_ stack: StorecastStack, _ metric: String, labelled label: String? = nil, within timeout: Duration,
                          until enough: (Double) -> Bool) async -> Double {
        var sum = -1.0
        _ = await StorecastStack.eventually(timeout: timeout) {
            let samples = await TestEnvironment.httpText("http://127.0.0.1:\(stack.metricsPort)/metrics").split(separator: "\n")
                .filter { ($0.hasPrefix(metric + "{") || $0.hasPrefix(metric + " ")) && label.map($0.contains) ?? true }
                .compactMap { $0.split(separator: " ").last.flatMap { Double($0) } }
            sum = samples.isEmpty ? -1 : samples.reduce(0, +)
            return enough(sum)
        }
        return sum
    }

    /// A stack of its own with shop's `stream` live (a 426x240 publisher for 40 s, stopped by
    /// the caller), its first variant's directory and newest whole part (``livePart(_:stream:)``).
    static func liveShow(_ stream: String, packagerArguments: [String] = []) async throws -> (stack: StorecastStack, publisher: ServiceProcess, variant: String, part: String) {
        let stack = try StorecastStack()
        let key = try await stack.provisionStream(tenant: "shop", stream: stream)
        try stack.start(packagerArguments: packagerArguments)
        try await stack.waitUntilReady()
        let publisher = try EndToEndTests.publisher(url: stack.rtmpURL(key: key), seconds: 40, logDirectory: stack.logDirectory, size: "426x240")
        do {
            let (variant, part) = try await livePart(stack, stream: stream)
            return (stack, publisher, variant, part)
        } catch {
            publisher.stop(grace: 1)
            throw error
        }
    }

    /// Once shop's `stream` is live over plain HTTP: its first variant's directory
    /// (`GENERATION/RENDITION`) and the newest whole part in it (not the preload hint's, which
    /// the router would hold and stream).
    static func livePart(_ stack: StorecastStack, stream: String) async throws -> (variant: String, part: String) {
        let url = "\(stack.playbackBase)/live/shop/\(stream)"
        var master = ""
        let live = await StorecastStack.eventually(timeout: .seconds(30)) {
            master = await TestEnvironment.httpText("\(url)/master.m3u8")
            return master.contains("#EXT-X-STREAM-INF")
        }
        #expect(live, "the show went live: \(master)\n\(stack.logs())")
        let variant = try #require(master.firstMatch(of: /\n([0-9a-z]+\/[0-9a-z]+)\/index\.m3u8\n/).map { String($0.1) }, "\(master)")
        let playlist = await TestEnvironment.httpText("\(url)/\(variant)/index.m3u8")
        let part = try #require(playlist.matches(of: /#EXT-X-PART:[^\n]*URI="(part-[0-9]+\.[0-9]+\.m4s)"/).last.map { String($0.1) }, "\(playlist)")
        return (variant, part)
    }

    /// Status and Content-Type of each HTTP/1.1 response in `bytes`, in order (Content-Length bodies).
    static func responses(_ bytes: [UInt8]) -> [(status: Int, type: String)] {
        var out: [(Int, String)] = [], at = 0
        let separator = Array("\r\n\r\n".utf8)
        while at < bytes.count, let end = (at...max(at, bytes.count - 4)).first(where: { bytes[$0..<min($0 + 4, bytes.count)].elementsEqual(separator) }) {
            let lines = String(decoding: bytes[at..<end], as: UTF8.self).components(separatedBy: "\r\n")
            var fields: [String: String] = [:]
            for line in lines.dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            let status = lines.first?.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
            out.append((status, fields["content-type"] ?? ""))
            at = end + 4 + (fields["content-length"].flatMap { Int($0) } ?? 0)
        }
        return out
    }
}
