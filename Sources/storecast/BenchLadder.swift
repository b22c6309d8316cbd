import ArgumentParser
import FFmpegCodecs
import Foundation
import Transcoder

/// `storecast bench-ladder`: the transcoder's ladder on a file, for bench/ladder_throughput.sh.
struct BenchLadder: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench-ladder",
        abstract: "Encode an H.264 Annex B file into the ABR ladder as fast as possible; print frames per second.")

    @Option(help: "H.264 Annex B input with access unit delimiters and no B-frames (ffmpeg … -bf 0 -x264-params aud=1 -f h264).") var input: String
    @Option(help: "Frame rate of the input.") var frameRate = 30
    @Option(help: "x264 preset.") var preset = "veryfast"
    @Option(help: "x264 threads per rendition (0: one per rung, spare cores to the top rung).") var encoderThreads = 0
    @Option(help: "Comma-separated rungs (default: every rung that fits the source).") var rungs = ""
    @Option(help: "What each rung scales from: source or rung (the nearest larger one).") var scaleFrom = "source"
    @Option(help: "Folder to write each rendition to as <name>.h264 (for PSNR).") var outputDirectory: String?

    func run() async throws {
        FFmpegLogging.quiet()
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: input)))
        var settings = TranscoderSettings(preset: preset, gopSeconds: 2, encoderThreads: encoderThreads, rungs: rungs.split(separator: ",").map(String.init), thumbnailInterval: 0)
        guard let from = TranscoderSettings.ScaleSource(rawValue: scaleFrom) else { throw ValidationError("--scale-from is rung or source") }
        settings.scaleFrom = from
        let chosen = settings
        let (input, frameRate) = (bytes, self.frameRate)
        // libavcodec blocks: run it on a thread of its own, not on the cooperative pool.
        let result = try await withCheckedThrowingContinuation { (c: CheckedContinuation<LadderBenchmark.Result, any Error>) in
            Thread { c.resume(with: Result { try LadderBenchmark.run(annexB: input, frameRate: frameRate, settings: chosen) }) }.start()
        }
        if let outputDirectory {
            for r in result.renditions {
                try Data(r.annexB).write(to: URL(fileURLWithPath: outputDirectory).appendingPathComponent("\(r.name).h264"))
            }
        }
        print(String(format: "frames %d seconds %.3f fps %.2f renditions %@", result.sourceFrames, result.seconds, result.framesPerSecond,
                     result.renditions.map { "\($0.name):\($0.width)x\($0.height)" }.joined(separator: ",")))
    }
}
