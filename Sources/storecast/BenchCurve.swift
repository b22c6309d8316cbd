import ArgumentParser
import Synchronization
import Foundation
import Glibc
import StorecastRuntime
import ZeroMQ

/// `storecast bench-curve`: what CURVE costs on the ladder path. One stream's ZeroMQ traffic
/// (the publisher's 1080p source from ingest to a worker, and the 4 rungs plus audio from the
/// worker to the packager: 30 video frames and 47 audio frames a second) pushed from a PUSH to a
/// PULL over TCP on this host, as fast as it goes, plaintext and then CURVE with an allow-list
/// (the services' own code path: ``ClusterKeys``). Prints the CPU seconds both ends spent per
/// second of stream, for bench/curve_cost.sh to set beside the ladder's own CPU.
struct BenchCurve: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "bench-curve", abstract: "CPU of one stream's ZeroMQ traffic, plaintext and CURVE.")

    @Option(help: "Seconds of stream to send.") var seconds = 120
    @Option(help: "Directory for the throwaway keys.") var keys = "/tmp/storecast-bench-curve-keys"

    /// Bytes of one second of stream, as messages: source + rungs (bits per second) at 30 fps, audio.
    static let videoRates = [6_000_000, 6_000_000, 2_000_000, 800_000, 400_000]  // source, 1080p, 720p, 480p, 360p
    static let audioMessages = 47 * 2  // 128 kbit/s AAC in and out

    func run() throws {
        try? FileManager.default.removeItem(atPath: keys)
        try ClusterKeys.generate(into: keys)
        let stranger = ZMQSecurity.plaintext
        let plain = try measure(server: stranger, client: stranger)
        let curve = try measure(server: ClusterKeys.security(directory: keys, role: .packager, logger: .init(label: "bench")),
                                client: ClusterKeys.security(directory: keys, role: .transcoder, logger: .init(label: "bench")))
        print(String(format: "seconds %d bytes_per_stream_second %d plaintext_cpu_per_stream_second %.5f curve_cpu_per_stream_second %.5f",
                     seconds, Self.bytesPerSecond, plain, curve))
    }

    static var bytesPerSecond: Int { videoRates.reduce(0, +) / 8 + audioMessages * 400 }

    /// CPU seconds (user + system, this process: both ends and libzmq's I/O threads) per second of stream.
    private func measure(server: ZMQSecurity, client: ZMQSecurity) throws -> Double {
        let serverContext = try ZMQContext(security: server)
        let clientContext = try ZMQContext(security: client)
        let messages = seconds * (30 * Self.videoRates.count + Self.audioMessages)
        let received = DispatchSemaphore(value: 0)
        let bound = DispatchSemaphore(value: 0)
        let failure = Mutex<String?>(nil)
        let endpoint = Mutex("")
        let start = Self.cpuSeconds()
        let receiver = Thread {
            do {
                let pull = try ZMQSocket(context: serverContext, type: .pull, maximumMessageSize: 1 << 24)
                try pull.setReceiveHighWaterMark(100_000)
                try pull.bind("tcp://127.0.0.1:*")  // a free port
                endpoint.withLock { $0 = pull.lastEndpoint }
                bound.signal()
                for _ in 0..<messages { _ = try pull.receive() }
            } catch {
                failure.withLock { $0 = "\(error)" }
                bound.signal()
            }
            received.signal()
        }
        receiver.start()
        bound.wait()
        if let error = failure.withLock({ $0 }) { throw ValidationError("the receiving end failed: \(error)") }
        let push = try ZMQSocket(context: clientContext, type: .push, maximumMessageSize: 1 << 16)
        try push.setSendHighWaterMark(100_000)
        try push.connect(endpoint.withLock { $0 }, server: "packager")
        let frames = Self.videoRates.map { [UInt8](repeating: 0x5A, count: $0 / 8 / 30) }
        let audio = [UInt8](repeating: 0x21, count: 400)
        for _ in 0..<seconds {
            for _ in 0..<30 { for frame in frames { try push.send([frame]) } }
            for _ in 0..<Self.audioMessages { try push.send([audio]) }
        }
        received.wait()
        if let error = failure.withLock({ $0 }) { throw ValidationError("the receiving end failed: \(error)") }
        return (Self.cpuSeconds() - start) / Double(seconds)
    }

    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }
}
