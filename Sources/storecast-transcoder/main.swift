import ArgumentParser
import Foundation
import Logging
import StorecastRuntime
import Transcoder
import ZeroMQ

@main
struct TranscoderCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "storecast-transcoder", abstract: "Transcoder worker: decodes each leased stream once and encodes its ABR ladder with libx264.")

    @Option(parsing: .upToNextOption, help: "ZeroMQ endpoints of the ingest nodes to take work from.") var ingest: [String] = ["tcp://127.0.0.1:5601"]
    @Option(help: "ZeroMQ endpoint of the metrics collector.") var metricsEndpoint = "tcp://127.0.0.1:5603"
    @Option(help: "1080p30 sources this worker takes at once; a source costs its pixel rate (720p30 0.44 of a slot, 1080p60 2, at least 0.25).") var slots: UInt16 = 2
    @Option(help: "x264 preset.") var preset = "veryfast"
    @Option(help: "Seconds between aligned keyframes (1 or 2).") var gop: Double = 2
    @Option(help: "Comma-separated rungs to produce (1080p,720p,480p,360p); default all that fit the source.") var rungs = ""
    @Option(help: "x264 threads per rendition (0: one per rung, spare cores to the top rung).") var encoderThreads = 0
    @Option(help: "Worker id (unique per worker).") var node: String?
    @Option(help: "Seconds SIGTERM waits for ingest to move this worker's streams to other workers.") var drainTimeout: Double = 10
    @Option(help: "Seconds of stream time between JPEG previews for the feed (0 turns them off).") var thumbnailInterval: Double = 5
    @Option(help: "Seconds after a stream's first keyframe to one extra keyframe in every rung, so its first segment is that short and players waiting for the show start about a GOP sooner; the default, 0.4 s, is two of the packager's default 0.2 s parts, the shortest first segment hls.js loads part by part (0 turns it off; at or past the GOP it does nothing).") var fastStart: Double = 0.4
    @Option(help: "What each rung scales from: source (default; sharper small rungs) or rung (the nearest larger one).") var scaleFrom = "source"
    @Flag(help: "Also pass the publisher's H.264 through as a 'source' rendition.") var sourceRung = false
    @Option(help: "JPEG shown while a publisher sends no video (default: the last frame, dimmed).") var slateImage: String?
    @Option(help: "Directory of the cluster's CURVE keys (`storecast keys DIR` writes it; default: $STORECAST_ZMQ_KEYS). Every ZeroMQ socket is authenticated with them.") var zmqKeys: String?
    @Option(help: "Log level.") var logLevel = "info"

    func run() async throws {
        Observability.bootstrap(service: "transcoder", logLevel: Logger.Level(rawValue: logLevel) ?? .info)
        let logger = Logger(label: "storecast.transcoder")
        let workerID = node ?? NodeIdentity.defaultNodeID(service: "transcoder")
        let context = try ClusterKeys.context(option: zmqKeys, role: .transcoder, logger: logger)
        var slate: [UInt8]?
        if let slateImage {
            guard let data = FileManager.default.contents(atPath: slateImage) else {
                throw ValidationError("cannot read the slate image \(slateImage); give the path of a JPEG file")
            }
            guard TranscoderSettings.slateImageDecodes(Array(data)) else {
                throw ValidationError("the slate image \(slateImage) does not decode as a JPEG; export it as a baseline JPEG")
            }
            slate = Array(data)
        }
        let chosenRungs = rungs.split(separator: ",").map(String.init)
        let known = RenditionLadder.field.rungs.map(\.name)
        if let unknown = chosenRungs.first(where: { !known.contains($0) }) {
            throw ValidationError("--rungs: \(unknown) is not a rung; choose from \(known.joined(separator: ","))")
        }
        var settings = TranscoderSettings(preset: preset, gopSeconds: gop, encoderThreads: encoderThreads, rungs: chosenRungs, thumbnailInterval: thumbnailInterval)
        settings.slateImage = slate
        guard fastStart.isFinite, (0...60).contains(fastStart) else { throw ValidationError("--fast-start is 0 (off) to 60 seconds, got \(fastStart)") }
        settings.fastStart = fastStart > 0 ? fastStart : nil
        guard let from = TranscoderSettings.ScaleSource(rawValue: scaleFrom) else { throw ValidationError("--scale-from is rung or source, not \(scaleFrom)") }
        settings.scaleFrom = from
        settings.sourceRung = sourceRung
        let worker = TranscoderService(configuration: .init(workerID: workerID, capacity: slots, ingestEndpoints: ingest, settings: settings, drainTimeout: .milliseconds(Int(drainTimeout * 1000))), context: context, logger: logger)
        let telemetry = TelemetryReporter(collectorEndpoint: metricsEndpoint, service: "transcoder", node: workerID, context: context, logger: logger)
        try await ServiceRunner.run([worker, telemetry], logger: logger)
    }
}
