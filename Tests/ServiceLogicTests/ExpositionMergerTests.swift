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
