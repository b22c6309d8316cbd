@testable import MetricsCollector
import StorecastWire
import Testing

@Suite struct ExpositionMergerTests {
    @Test func labelsEverySampleAndKeepsOneHeaderPerFamily() {
        let a = """
        # TYPE storecast_ingest_bytes_total counter
        storecast_ingest_bytes_total 10
        # TYPE req histogram
        req_bucket{le="1"} 2
        req_sum 3
        req_count 2
        """
        let b = """
        # TYPE storecast_ingest_bytes_total counter
        storecast_ingest_bytes_total{x="y"} 5
        """
        let merged = ExpositionMerger.merge([.init(service: "ingest", node: "n1", exposition: a), .init(service: "ingest", node: "n2", exposition: b)])
        #expect(merged == """
        # TYPE storecast_ingest_bytes_total counter
        storecast_ingest_bytes_total{service="ingest",node="n1"} 10
        storecast_ingest_bytes_total{service="ingest",node="n2",x="y"} 5
        # TYPE req histogram
        req_bucket{service="ingest",node="n1",le="1"} 2
        req_sum{service="ingest",node="n1"} 3
        req_count{service="ingest",node="n1"} 2

        """)
    }

    @Test func boardReportsSilentProcessesDown() {
        let board = TelemetryBoard()
        let t0 = ContinuousClock.Instant.now
        board.record(Telemetry(service: "ingest", node: "a", pid: 1, uptimeSeconds: 5, exposition: ""), at: t0)
        board.record(Telemetry(service: "packager", node: "b", pid: 2, uptimeSeconds: 5, exposition: ""), at: t0 + .seconds(3))
        let text = board.exposition(now: t0 + .seconds(4), own: "")
        #expect(text.contains("storecast_up{service=\"ingest\",node=\"a\"} 0"))
        #expect(text.contains("storecast_up{service=\"packager\",node=\"b\"} 1"))
    }
}

/// Issue 23: forged telemetry. Names from the wire are escaped, a process cannot speak for
/// another, entries are bounded and silent processes expire.
@Suite struct HostileTelemetryTests {
    static let t0 = ContinuousClock.Instant.now
    static func beat(_ service: String, _ node: String, _ exposition: String = "") -> Telemetry {
        Telemetry(service: service, node: node, pid: 1, uptimeSeconds: 1, exposition: exposition)
    }

    @Test func labelValuesAreEscapedInEveryLine() {
        let board = TelemetryBoard()
        board.record(Self.beat("ingest\"} 1\nstorecast_up{service=\"x", "n\\1", "m 1"), at: Self.t0)
        let text = board.exposition(now: Self.t0, own: "")
        #expect(text.contains(#"storecast_up{service="ingest\"} 1\nstorecast_up{service=\"x",node="n\\1"} 1"#))
        #expect(!text.contains("\nstorecast_up{service=\"x"))
        #expect(text.contains(#"m{service="ingest\"} 1\nstorecast_up{service=\"x",node="n\\1"} 1"#))
    }

    static let forgedLines: [(String, Bool)] = [
        ("ok_total 1", true), ("ok_total{a=\"b\"} 1", true),
        ("storecast_up{service=\"ingest\",node=\"real\"} 1", false), ("x{node=\"other\"} 1", false), ("x{a=\"1\",service=\"y\"} 1", false),
        ("1bad 1", false), ("bad-name 1", false), ("bad name{a=\"b\"} 1", false),
    ]

    @Test(arguments: forgedLines) func aProcessCannotSpeakForAnother(_ line: String, _ kept: Bool) {
        let merged = ExpositionMerger.merge([.init(service: "evil", node: "n", exposition: line)])
        #expect(!merged.isEmpty == kept, "\(line)")
    }

    @Test func entriesAreBoundedAndSilentProcessesExpire() {
        let board = TelemetryBoard(maximumNodes: 3, forgetAfter: .seconds(60))
        for i in 0..<3 { #expect(board.record(Self.beat("transcoder", "w\(i)"), at: Self.t0) == .recorded) }
        #expect(board.record(Self.beat("transcoder", "forged"), at: Self.t0) == .full)
        #expect(board.record(Self.beat("transcoder", "w1"), at: Self.t0 + .seconds(30)) == .recorded)  // known: updated
        #expect(board.record(Self.beat("transcoder", String(repeating: "n", count: 129)), at: Self.t0) == .badName)
        #expect(board.record(Self.beat("", "n"), at: Self.t0) == .badName)
        // w0 and w2 silent for over a minute: forgotten, room for a new one.
        #expect(board.record(Self.beat("transcoder", "w3"), at: Self.t0 + .seconds(61)) == .recorded)
        #expect(board.snapshot(now: Self.t0 + .seconds(61)).map(\.telemetry.node) == ["w1", "w3"])
    }
}
