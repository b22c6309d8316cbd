internal import CFFmpeg

/// libav* print through their own logger to stderr. Storecast keeps that to warnings and errors
/// (x264's per-stream statistics at "info" would swamp structured logs).
public enum FFmpegLogging {
    public static func quiet() {
        av_log_set_level(AV_LOG_WARNING)
    }

    /// Nothing but fatal errors (tests that feed corrupt data on purpose).
    public static func silent() {
        av_log_set_level(AV_LOG_FATAL)
    }
}
