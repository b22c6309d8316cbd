import PostgresClient
import StorecastRuntime
import Testing

/// When a reader's notifications do not arrive (`NotificationWatch`), as a table of reads: each
/// read's wake-up ("n" notified, "t" the fallback poll, "d" the connection down, "-" the first
/// read) and whether it found new rows ("+") or not ("."), and what the watch says after each.
@Suite struct NotificationWatchTests {
    static let cases: [(name: String, reads: String, says: [NotificationWatch.Action?])] = [
        ("healthy: each card announced", "-+ n+ n+ n. n+", [nil, nil, nil, nil, nil]),
        ("a poll that races a commit, then its notification", "-. t+ n. t+ n.", [nil, nil, nil, nil, nil]),
        ("polls with nothing new say nothing", "-. t. t. t. t.", [nil, nil, nil, nil, nil]),
        ("three polls in a row find what no one announced", "-. t+ t+ t+", [nil, nil, nil, .unheard(reads: 3)]),
        ("warned once, not at every read after", "t+ t+ t+ t+ t+ t.", [nil, nil, .unheard(reads: 3), nil, nil, nil]),
        ("empty polls between do not break the row", "t+ t. t+ t. t+", [nil, nil, nil, nil, .unheard(reads: 3)]),
        ("a notification starts the count again", "t+ t+ n. t+ t+", [nil, nil, nil, nil, nil]),
        ("heard again after the warning, and warned again later", "t+ t+ t+ n+ t+ t+ t+", [nil, nil, .unheard(reads: 3), .heardAgain, nil, nil, .unheard(reads: 3)]),
        ("reads while the connection is down are not judged", "d+ d+ d+ d+ t+", [nil, nil, nil, nil, nil]),
        ("the first read finds what was there before", "-+ t+ t+", [nil, nil, nil]),
    ]

    @Test(arguments: cases)
    func saysWhatTheReadsShow(_ c: (name: String, reads: String, says: [NotificationWatch.Action?])) {
        var watch = NotificationWatch()
        let wakeups: [Character: PostgresListener.Wakeup?] = ["n": .notified, "t": .timedOut, "d": .disconnected, "-": nil]
        let said = c.reads.split(separator: " ").map { read in
            watch.read(after: wakeups[read.first!]!, foundNew: read.last == "+")
        }
        #expect(said == c.says, "\(c.name): \(c.reads)")
    }

    @Test func aThresholdOfOneWarnsAtTheFirstUnannouncedFind() {
        var watch = NotificationWatch(threshold: 0)
        #expect(watch.threshold == 1)
        #expect(watch.read(after: .timedOut, foundNew: true) == .unheard(reads: 1))
    }
}
