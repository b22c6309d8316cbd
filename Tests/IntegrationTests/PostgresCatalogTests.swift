import Foundation
import Logging
import PostgresClient
import StorecastRuntime
import Synchronization
import Testing

@Suite(.serialized) struct PostgresCatalogTests {
    @Test func migrationsApplyOnceAndAreTracked() async throws {
        let db = PostgresExecutor(conninfo: try TestEnvironment.freshDatabase())
        defer { db.shutdown() }
        let migrator = try Migrator(directory: TestEnvironment.migrationsDirectory)
        let first = try await migrator.apply(on: db)
        #expect(first == migrator.migrations.map(\.version))
        #expect(!first.isEmpty)
        let second = try await migrator.apply(on: db)
        #expect(second.isEmpty, "a second run applies nothing")
        let tracked = try await db.execute("SELECT count(*) AS n FROM schema_migrations")
        #expect(tracked.int(0, "n") == Int64(first.count))
    }

    @Test func streamKeysAreStoredHashedAndFoundByKey() async throws {
        let db = PostgresExecutor(conninfo: try TestEnvironment.freshDatabase())
        defer { db.shutdown() }
        _ = try await Migrator(directory: TestEnvironment.migrationsDirectory).apply(on: db)
        let catalog = StreamCatalog(database: db)
        _ = try await catalog.createTenant(slug: "shop", name: "Shop", maxConcurrentStreams: 1)
        let created = try await catalog.createStream(tenantSlug: "shop", slug: "launch")
        #expect(created.streamKey.hasPrefix("sk_") && created.streamKey.count == 35)
        let stored = try await db.execute("SELECT stream_key_hash FROM streams WHERE id = $1", [String(created.streamID)])
        #expect(stored.value(0, "stream_key_hash") == StreamKey.hash(created.streamKey))
        #expect(stored.value(0, "stream_key_hash") != created.streamKey)
        let found = try #require(try await catalog.stream(forKey: created.streamKey))
        #expect(found.streamID == created.streamID && found.tenantSlug == "shop" && found.maxConcurrentStreams == 1)
        #expect(try await catalog.stream(forKey: "sk_wrong") == nil)
    }

    @Test func sessionsOpenAndCloseAndStatusFollows() async throws {
        let db = PostgresExecutor(conninfo: try TestEnvironment.freshDatabase())
        defer { db.shutdown() }
        _ = try await Migrator(directory: TestEnvironment.migrationsDirectory).apply(on: db)
        let catalog = StreamCatalog(database: db)
        _ = try await catalog.createTenant(slug: "shop", name: "Shop")
        let s = try await catalog.createStream(tenantSlug: "shop", slug: "a")
        let session = try await catalog.openSession(streamID: s.streamID, ingestNode: "ingest-1", remoteAddress: "10.0.0.1:5000", client: "FMLE/3.0")
        #expect(try await catalog.listStreams().first?.status == "live")
        try await catalog.describeSession(session, videoCodec: "h264", audioCodec: "aac", width: 1280, height: 720)
        try await catalog.closeSession(session, streamID: s.streamID, reason: "unpublished")
        let row = try await db.execute("SELECT ended_at IS NOT NULL AS ended, end_reason, width, video_codec FROM sessions WHERE id = $1", [String(session)])
        #expect(row.value(0, "ended") == "t" && row.value(0, "end_reason") == "unpublished" && row.value(0, "width") == "1280" && row.value(0, "video_codec") == "h264")
        #expect(try await catalog.listStreams().first?.status == "ended")
        // Writes retried after an outage land late: they never overwrite a newer session's state.
        let next = try await catalog.openSession(streamID: s.streamID, ingestNode: "ingest-1", remoteAddress: "10.0.0.1:5001", client: "FMLE/3.0")
        try await db.run { try StreamCatalog.setStatus($0, streamID: s.streamID, session: session, "reconnecting") }
        try await catalog.closeSession(session, streamID: s.streamID, reason: "disconnected")
        #expect(try await catalog.listStreams().first?.status == "live", "the old session's late writes leave the new session live")
        try await db.run { try StreamCatalog.setStatus($0, streamID: s.streamID, session: next, "reconnecting") }
        #expect(try await catalog.listStreams().first?.status == "reconnecting")
    }

    @Test func unknownTenantAndDuplicateSlugAreClearErrors() async throws {
        let db = PostgresExecutor(conninfo: try TestEnvironment.freshDatabase())
        defer { db.shutdown() }
        _ = try await Migrator(directory: TestEnvironment.migrationsDirectory).apply(on: db)
        let catalog = StreamCatalog(database: db)
        await #expect(throws: PostgresError.self) { _ = try await catalog.createStream(tenantSlug: "nobody", slug: "x") }
        _ = try await catalog.createTenant(slug: "shop", name: "Shop")
        _ = try await catalog.createStream(tenantSlug: "shop", slug: "x")
        do {
            _ = try await catalog.createStream(tenantSlug: "shop", slug: "x")
            Issue.record("duplicate slug accepted")
        } catch let error as PostgresError {
            #expect(error.code == .uniqueViolation)
        }
    }

    @Test func leasesAreRecordedInOrderWithOneCurrentPerStream() async throws {
        let db = PostgresExecutor(conninfo: try TestEnvironment.freshDatabase())
        defer { db.shutdown() }
        _ = try await Migrator(directory: TestEnvironment.migrationsDirectory).apply(on: db)
        let catalog = StreamCatalog(database: db)
        _ = try await catalog.createTenant(slug: "shop", name: "Shop")
        let a = try await catalog.createStream(tenantSlug: "shop", slug: "a")
        let b = try await catalog.createStream(tenantSlug: "shop", slug: "b")
        let writes = DatabaseWriteBehind(database: db, logger: Logger(label: "test"))
        defer { writes.stop() }
        let ledger = LeaseLedger(writes: writes, ingestNode: "ingest-1")
        // Fire-and-forget calls, as the dispatcher thread makes them, written in order behind.
        ledger.granted(streamID: a.streamID, workerID: "w1", replacing: .workerUnreachable)
        ledger.granted(streamID: b.streamID, workerID: "w1", replacing: .workerUnreachable)
        ledger.granted(streamID: a.streamID, workerID: "w2", replacing: .workerDraining)
        ledger.ended(streamID: b.streamID, reason: .streamEnded)
        #expect(await writes.flush(timeout: .seconds(10)))
        let history = try await LeaseLedger.list(in: db, currentOnly: false)
        #expect(history.map { "\($0.stream) \($0.workerID) \($0.endReason ?? "current")" } == [
            "a w2 current", "b w1 stream ended", "a w1 worker draining",
        ])
        #expect(try await LeaseLedger.list(in: db, currentOnly: true).map(\.workerID) == ["w2"])
        // The database refuses a second current lease for a stream.
        await #expect(throws: PostgresError.self) {
            try await db.execute("INSERT INTO transcoder_leases (stream_id, worker_id, ingest_node) VALUES ($1, 'w3', 'x')", [String(a.streamID)])
        }
        // A restarted ingest node ends what its previous run left open, and only that.
        let other = LeaseLedger(writes: writes, ingestNode: "ingest-2")
        other.granted(streamID: b.streamID, workerID: "w9", replacing: .workerUnreachable)
        #expect(await writes.flush(timeout: .seconds(10)))
        #expect(try await ledger.closeLeftovers() == 1)
        let current = try await LeaseLedger.list(in: db, currentOnly: true)
        #expect(current.map(\.workerID) == ["w9"])
        #expect(try await LeaseLedger.list(in: db, currentOnly: false).first { $0.workerID == "w2" }?.endReason == LeaseEndReason.ingestRestarted.rawValue)
    }

    @Test func ladderProfileResolvesStreamThenTenantThenWorker() async throws {
        let db = PostgresExecutor(conninfo: try TestEnvironment.freshDatabase())
        defer { db.shutdown() }
        _ = try await Migrator(directory: TestEnvironment.migrationsDirectory).apply(on: db)
        let catalog = StreamCatalog(database: db)
        let profiles = LadderProfileStore(database: db)
        _ = try await catalog.createTenant(slug: "shop", name: "Shop")
        _ = try await catalog.createTenant(slug: "plain", name: "Plain")
        let a = try await catalog.createStream(tenantSlug: "shop", slug: "a")
        let b = try await catalog.createStream(tenantSlug: "shop", slug: "b")
        let c = try await catalog.createStream(tenantSlug: "plain", slug: "c")
        let rungs = [LadderProfileStore.RungJSON(name: "480p", shortSide: 480, bitrate: 900_000)]
        let standard = try LadderProfileStore.validated(name: "standard", rungs: rungs, preset: "veryfast", gopSeconds: 2, lowLatency: true)
        let vip = try LadderProfileStore.validated(name: "vip", rungs: rungs + [.init(name: "1080p", shortSide: 1080, bitrate: 6_000_000)], preset: "fast", gopSeconds: 1, lowLatency: false)
        try await profiles.save(tenantSlug: "shop", profile: standard, makeDefault: true)
        try await profiles.save(tenantSlug: "shop", profile: vip, makeDefault: false)
        try await profiles.assign(tenantSlug: "shop", streamSlug: "b", profileName: "vip")

        #expect(try await catalog.stream(forKey: a.streamKey)?.profile == standard, "the tenant's default")
        #expect(try await catalog.stream(forKey: b.streamKey)?.profile == vip, "the stream's own, round-tripped through JSONB")
        #expect(try await catalog.stream(forKey: c.streamKey)?.profile == nil, "no profile: the worker decides")
        try await profiles.assign(tenantSlug: "shop", streamSlug: "b", profileName: nil)
        #expect(try await catalog.stream(forKey: b.streamKey)?.profile?.name == "standard")
        await #expect(throws: LadderProfileStore.Problem.self) { try await profiles.assign(tenantSlug: "shop", streamSlug: "b", profileName: "missing") }
        await #expect(throws: LadderProfileStore.Problem.self) { try await profiles.save(tenantSlug: "nobody", profile: vip, makeDefault: false) }
    }

    /// A recording's product cards (issue 18), as a table over one stream's two shows: the
    /// cards that show within the recorded span, including one that started before it and still
    /// showed, and none of the earlier show's.
    @Test func aRecordingGetsTheCardsThatShowWithinIt() async throws {
        let db = PostgresExecutor(conninfo: try TestEnvironment.freshDatabase())
        defer { db.shutdown() }
        _ = try await Migrator(directory: TestEnvironment.migrationsDirectory).apply(on: db)
        let catalog = StreamCatalog(database: db)
        _ = try await catalog.createTenant(slug: "shop", name: "Shop")
        let stream = try await catalog.createStream(tenantSlug: "shop", slug: "show").streamID
        let t0 = 1_795_000_000.0
        // Show 1 from t0, show 2 from t0 + 1000; the recording covers show 2's t0 + 1100 ... t0 + 1200.
        func session(_ start: Double) async throws -> String {
            try #require(try await db.execute("INSERT INTO sessions (stream_id, ingest_node, remote_addr, started_at) VALUES ($1, 'i', 'r', to_timestamp($2::double precision)) RETURNING id",
                                               [String(stream), String(start)]).value(0, "id"))
        }
        let (first, second) = (try await session(t0), try await session(t0 + 1000))
        let cards: [(name: String, session: String, at: Double, duration: Int?)] = [
            ("show 1's last, open", first, t0 + 500, nil),
            ("show 2, ended before the recording", second, t0 + 1010, 30_000),
            ("show 2, open, replaced before the recording", second, t0 + 1020, nil),
            ("show 2, open, still showing at the start", second, t0 + 1050, nil),
            ("show 2, 60 s from before the start", second, t0 + 1090, 60_000),
            ("show 2, within", second, t0 + 1150, nil),
            ("show 2, after the end", second, t0 + 1250, nil),
        ]
        for c in cards {
            _ = try await db.execute(
                "INSERT INTO highlights (stream_id, session_id, product_id, title, duration_ms, starts_at, created_by) VALUES ($1, $2, 'p', $3, $4::int, to_timestamp($5::double precision), 'test')",
                [String(stream), c.session, c.name, c.duration.map(String.init), String(c.at)])
        }
        let found = try await db.run { try HighlightStore.within($0, tenant: "shop", stream: "show", start: t0 + 1100, end: t0 + 1200) }
        #expect(found.map(\.title) == ["show 2, open, still showing at the start", "show 2, 60 s from before the start", "show 2, within"], "\(found.map(\.title))")
    }

    @Test func unreachableServerIsAConnectionError() async throws {
        let db = PostgresExecutor(conninfo: "host=127.0.0.1 port=\(try TestEnvironment.freePort()) user=x dbname=x connect_timeout=2")
        defer { db.shutdown() }
        do {
            try await db.execute("SELECT 1")
            Issue.record("query against a closed port succeeded")
        } catch let error as PostgresError {
            #expect(error.code == .connectionFailed)
            #expect(error.message.contains("cannot reach PostgreSQL"))
        }
    }
}

/// Product cards reach the packagers by NOTIFY (issue 18): a packager's listener wakes when a
/// card commits, not at its next fallback poll, and listens again after its connection is lost.
@Suite(.serialized) struct PostgresListenerTests {
    /// The wake-ups a listener has given, collected as they come (a `next()` awaited with a
    /// deadline cannot be cancelled: cancelling it would end the stream).
    final class Wakeups: Sendable {
        private final class Seen: Sendable { let list = Mutex<[PostgresListener.Wakeup]>([]) }
        private let seen = Seen()
        private let task: Task<Void, Never>
        init(_ listener: PostgresListener) {
            let seen = self.seen
            task = Task { for await w in listener.wakeups { seen.list.withLock { $0.append(w) } } }
        }
        deinit { task.cancel() }
        /// The wake-up after the first `count`, or nil when none came within `seconds`.
        func after(_ count: Int, within seconds: Double) async -> PostgresListener.Wakeup? {
            await first(after: count, within: seconds) { _ in true }?.wakeup
        }
        /// The first wake-up after the first `count` that `matches`, with its place.
        func first(after count: Int, within seconds: Double, where matches: (PostgresListener.Wakeup) -> Bool) async -> (index: Int, wakeup: PostgresListener.Wakeup)? {
            var found: (index: Int, wakeup: PostgresListener.Wakeup)?
            _ = await StorecastStack.eventually(timeout: .seconds(seconds)) {
                let list = seen.list.withLock { $0 }
                found = list.indices.first { $0 >= count && matches(list[$0]) }.map { ($0, list[$0]) }
                return found != nil
            }
            return found
        }
    }

    /// A live show (its stream id and session id).
    @discardableResult
    static func liveShow(_ db: PostgresExecutor) async throws -> (stream: Int64, session: Int64) {
        _ = try await Migrator(directory: TestEnvironment.migrationsDirectory).apply(on: db)
        let catalog = StreamCatalog(database: db)
        _ = try await catalog.createTenant(slug: "shop", name: "Shop")
        let stream = try await catalog.createStream(tenantSlug: "shop", slug: "show")
        let session = try await catalog.openSession(streamID: stream.streamID, ingestNode: "ingest-1", remoteAddress: "10.0.0.1:5000", client: "FMLE/3.0")
        return (stream.streamID, session)
    }

    static func post(_ db: PostgresExecutor, _ title: String) async throws {
        let outcome = try await db.run { try HighlightStore.create($0, tenant: "shop", stream: "show", .init(productId: "p", title: title), receivedAt: Date(), createdBy: "test") }
        guard case .created = outcome else { Issue.record("the card was not created: \(outcome)"); return }
    }

    /// A stack with the tenant shop's show provisioned, started and ready, and a connection to
    /// its database.
    static func startedShow() async throws -> (StorecastStack, PostgresExecutor) {
        let stack = try StorecastStack()
        _ = try await stack.provisionStream(tenant: "shop", stream: "show")
        try stack.start()
        try await stack.waitUntilReady()
        return (stack, PostgresExecutor(conninfo: stack.database))
    }

    /// A live show in a fresh database, and a listener on the cards' channel whose fallback is a
    /// minute: only a card's NOTIFY can wake it within a test's 10 s.
    static func listening() async throws -> (PostgresExecutor, PostgresListener, Wakeups) {
        let conninfo = try TestEnvironment.freshDatabase()
        let db = PostgresExecutor(conninfo: conninfo)
        try await liveShow(db)
        let listener = PostgresListener(conninfo: conninfo, channel: HighlightStore.channel, name: "test-cards", fallback: 60)
        return (db, listener, Wakeups(listener))
    }

    @Test func aPostedCardWakesTheListenerBeforeItsFallbackPoll() async throws {
        let (db, listener, wakeups) = try await Self.listening()
        defer { db.shutdown(); listener.stop() }
        #expect(await wakeups.after(0, within: 10) == .timedOut, "a listener wakes its reader once it listens (rows may have come before)")
        try await Self.post(db, "first")
        #expect(await wakeups.after(1, within: 10) == .notified)
    }

    @Test func aListenerWhoseConnectionIsKilledListensAgain() async throws {
        let (db, listener, wakeups) = try await Self.listening()
        defer { db.shutdown(); listener.stop() }
        #expect(await wakeups.after(0, within: 10) == .timedOut)
        let killed = try await db.execute(
            "SELECT count(pg_terminate_backend(pid)) AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'test-cards'")
        #expect(killed.int(0, "n") == 1, "the listener's backend is found and ended")
        // It listens again on a new connection and wakes its reader to look for what it missed
        // (an attempt that failed first would wake it as disconnected).
        let again = await wakeups.first(after: 1, within: 10) { $0 != .disconnected }
        #expect(again?.wakeup == .timedOut)
        try await Self.post(db, "after the loss")
        #expect(await wakeups.after((again?.index ?? 1) + 1, within: 10) == .notified)
    }

    /// While its connection cannot be made, a listener wakes its reader to poll, and says so.
    @Test func aListenerWithoutADatabaseWakesItsReaderAsDisconnected() async throws {
        let listener = PostgresListener(conninfo: "host=127.0.0.1 port=\(try TestEnvironment.freePort()) user=x dbname=x", channel: HighlightStore.channel,
                                        name: "test-nowhere", fallback: 60, disconnectedFallback: 0.1)
        defer { listener.stop() }
        let wakeups = Wakeups(listener)
        #expect(await wakeups.after(0, within: 10) == .disconnected)
        #expect(await wakeups.after(1, within: 10) == .disconnected, "and again, every disconnectedFallback")
    }

    /// The API's readers of the outbox (the stream events players wait on, the webhook
    /// dispatcher) are woken when an event is recorded; an event recorded once already wakes no
    /// one. Notifications arrive in commit order, so a sentinel sent last bounds what was heard.
    @Test func anEventRecordedInTheOutboxIsAnnouncedOnce() async throws {
        let conninfo = try TestEnvironment.freshDatabase()
        let db = PostgresExecutor(conninfo: conninfo)
        let ear = PostgresExecutor(conninfo: conninfo, name: "test-ear")
        defer { db.shutdown(); ear.shutdown() }
        let show = try await Self.liveShow(db)
        try await ear.run { try $0.listen(WebhookOutbox.channel) }
        let live: @Sendable (PostgresConnection) throws -> Void = {
            try WebhookOutbox.streamEvent($0, "stream.live", streamID: show.stream, sessionID: show.session, once: "stream.live \(show.session)")
        }
        try await db.run(live)
        try await db.run(live)
        try await db.execute("SELECT pg_notify($1, 'sentinel')", [WebhookOutbox.channel])
        let heard = try await ear.run { conn -> [String] in
            var heard: [String] = []
            let deadline = Date().addingTimeInterval(10)
            while !heard.contains("sentinel") && Date() < deadline { heard += try conn.notifications(waitingUpTo: 1).map(\.payload) }
            return heard
        }
        #expect(heard == ["stream.live", "sentinel"], "the second stream.live of one session is not recorded, so not announced")
        let recorded = try await db.execute("SELECT count(*) AS n FROM webhook_events WHERE type = 'stream.live'")
        #expect(recorded.int(0, "n") == 1)
    }

    /// Cards that reach a packager only by its fallback poll (rows written with no NOTIFY, as
    /// when the packager's database URL goes through a pooler in transaction mode, where LISTEN
    /// hears nothing) are still shown, and the packager says once why they are late; a card
    /// announced again is said too. (The table of when: NotificationWatchTests.)
    @Test func aPackagerWhoseCardsComeUnannouncedSaysSo() async throws {
        let (stack, db) = try await Self.startedShow()
        defer { db.shutdown() }
        let stream = try #require(try await db.execute("SELECT id FROM streams WHERE slug = 'show'").int(0, "id"))
        let session = try await StreamCatalog(database: db).openSession(streamID: stream, ingestNode: "ingest-1", remoteAddress: "10.0.0.1:5000", client: "FMLE/3.0")
        let unheard = "reach this packager only by its poll"
        // One unannounced card every 1.3 s: the packager polls every second, so at least three
        // polls in a row find one.
        var said = false
        for n in 1...8 where !said {
            _ = try await db.execute(
                "INSERT INTO highlights (stream_id, session_id, product_id, title, starts_at, created_by) VALUES ($1, $2, 'p', $3, now(), 'test')",
                [String(stream), String(session), "unannounced \(n)"])
            said = await StorecastStack.eventually(timeout: .milliseconds(1300)) { stack.service("storecast-packager")?.log.contains(unheard) == true }
        }
        let log = { stack.service("storecast-packager")?.log ?? "" }
        #expect(said, "the packager says why its cards are late:\n\(log().suffix(3000))")
        #expect(log().components(separatedBy: unheard).count == 2, "once")
        try await Self.post(db, "announced")
        let heard = await StorecastStack.eventually(timeout: .seconds(10)) { log().contains("product cards are announced again") }
        #expect(heard, "a card announced is noted:\n\(log().suffix(3000))")
        _ = await stack.stop()
    }

    /// The same for the API's live status (`…/events`): stream events that reach it only by its
    /// fallback poll (the outbox's announcing trigger turned off, as a pooler in transaction mode
    /// would leave it deaf) are still handed to the player waiting on them, and the API says once
    /// why they are late, and again when an event is announced.
    @Test func anAPIWhoseStreamEventsComeUnannouncedSaysSo() async throws {
        let (stack, db) = try await Self.startedShow()
        defer { db.shutdown() }
        // A player waiting on the show's events (the API reads the outbox only while one waits).
        let player = try ServiceProcess(name: "events-player", executable: URL(fileURLWithPath: "/usr/bin/curl"),
                                        arguments: ["-sN", "--max-time", "60", "http://127.0.0.1:\(stack.apiPort)/v1/tenants/shop/streams/show/events"],
                                        logDirectory: URL(fileURLWithPath: NSTemporaryDirectory()))
        defer { player.stop() }
        let subscribed = await StorecastStack.eventually(timeout: .seconds(10)) { player.log.contains("event: state") }
        try #require(subscribed, "the player's event stream opens: \(player.log)")
        _ = try await db.execute("ALTER TABLE webhook_events DISABLE TRIGGER webhook_events_announced")
        let log = { stack.service("storecast-api")?.log ?? "" }
        let unheard = "reach the API's live status (…/events) only by its poll"
        // One unannounced event every 1.3 s: the feed polls every second, so at least three polls
        // in a row find one.
        var said = false, emitted = 0
        for n in 1...8 where !said {
            _ = try await db.execute("SELECT storecast_emit(id, 'stream.health_changed', jsonb_build_object('tenant', 'shop', 'stream', 'show', 'n', $1::int)) FROM tenants WHERE slug = 'shop'",
                                     [String(n)])
            emitted = n
            said = await StorecastStack.eventually(timeout: .milliseconds(1300)) { log().contains(unheard) }
        }
        #expect(said, "the API says why its stream events are late:\n\(log().suffix(3000))")
        #expect(log().components(separatedBy: unheard).count == 2, "once")
        let handed = await StorecastStack.eventually(timeout: .seconds(5)) { player.log.components(separatedBy: "\"n\":").count - 1 >= emitted }
        #expect(handed, "every unannounced event still reaches the player (\(emitted) emitted):\n\(player.log.suffix(3000))")
        _ = try await db.execute("ALTER TABLE webhook_events ENABLE TRIGGER webhook_events_announced")
        _ = try await db.execute("SELECT storecast_emit(id, 'stream.health_changed', '{\"tenant\": \"shop\", \"stream\": \"show\"}'::jsonb) FROM tenants WHERE slug = 'shop'")
        let heard = await StorecastStack.eventually(timeout: .seconds(10)) { log().contains("stream events are announced again") }
        #expect(heard, "an event announced is noted:\n\(log().suffix(3000))")
        _ = await stack.stop()
    }

    @Test func aChannelThatIsNotAPlainIdentifierIsRefused() async throws {
        let db = PostgresExecutor(conninfo: try TestEnvironment.freshDatabase())
        defer { db.shutdown() }
        for channel in ["storecast_highlights; DROP TABLE streams", "Cards", "1cards", "", "cards-new"] {
            await #expect(throws: PostgresError.self, "\(channel)") { try await db.run { try $0.listen(channel) } }
        }
        try await db.run { try $0.listen("storecast_highlights") }
    }
}

/// What a failed statement means, as a table: a connection that is gone (a restarted server)
/// must read as "retry shortly", never as a bad query (whose text would reach an API caller).
@Suite struct PostgresErrorClassificationTests {
    static let cases: [(sqlState: String?, connectionLost: Bool, code: PostgresError.Code)] = [
        ("23505", false, .uniqueViolation),
        ("57P01", false, .connectionFailed),  // terminating connection due to administrator command
        ("57P03", false, .connectionFailed),  // the database system is starting up
        ("57014", false, .queryFailed),       // statement_timeout: the query's problem
        ("08006", false, .connectionFailed),  // connection failure
        (nil, true, .connectionFailed),       // "server closed the connection unexpectedly"
        ("42P01", true, .connectionFailed),
        ("42P01", false, .queryFailed),       // undefined table: the query's fault
        ("23503", false, .queryFailed),
        (nil, false, .queryFailed),
    ]

    @Test(arguments: cases.indices)
    func classify(_ i: Int) {
        let c = Self.cases[i]
        #expect(PostgresError.classify(sqlState: c.sqlState, connectionLost: c.connectionLost) == c.code, "\(c)")
    }
}
