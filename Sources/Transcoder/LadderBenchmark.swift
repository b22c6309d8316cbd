import Foundation
import MediaFormats
import StorecastWire

/// The ladder on a file, as fast as it goes: an H.264 Annex B elementary stream (with access unit
/// delimiters) is fed to the same ``LadderEncoder`` a live stream uses, on the calling thread,
/// without real-time pacing. For `storecast bench-ladder` and `bench/ladder_throughput.sh`.
public enum LadderBenchmark {
    public struct Rendition: Sendable {
        public var name: String
        public var width: Int
        public var height: Int
        /// The rendition as an Annex B stream (SPS and PPS before every IDR) for ffmpeg to read.
        public var annexB: [UInt8]
    }

    public struct Result: Sendable {
        public var sourceFrames: Int
        public var seconds: Double
        public var renditions: [Rendition]
        public var framesPerSecond: Double { Double(sourceFrames) / max(seconds, 1e-9) }
    }

    public enum Failure: Error, CustomStringConvertible {
        case noParameterSets
        public var description: String {
            "the input has no SPS/PPS; make it with ffmpeg -c:v libx264 -x264-params aud=1 -f h264"
        }
    }

    /// Splits an Annex B stream into access units at its delimiters (NAL type 9).
    static func accessUnits(_ annexB: [UInt8]) -> [[[UInt8]]] {
        var units: [[[UInt8]]] = []
        for nal in NALUnit.splitAnnexB(annexB) {
            if NALUnit.type(nal) == NALUnit.accessUnitDelimiter || units.isEmpty { units.append([]) }
            if NALUnit.type(nal) != NALUnit.accessUnitDelimiter { units[units.count - 1].append(nal) }
        }
        return units.filter { !$0.isEmpty }
    }

    public static func run(annexB: [UInt8], frameRate: Int, settings: TranscoderSettings) throws -> Result {
        let units = accessUnits(annexB)
        let nals = units.flatMap { $0 }
        guard let sps = nals.first(where: { NALUnit.type($0) == NALUnit.sps }), let pps = nals.first(where: { NALUnit.type($0) == NALUnit.pps }) else {
            throw Failure.noParameterSets
        }
        let record = try AVCDecoderConfigurationRecord(sequenceParameterSets: [sps], pictureParameterSets: [pps])
        let size = try record.parsedSPS()
        let source = TrackConfig(trackID: 1, kind: .video, codec: "h264", name: "source", timescale: 1000,
                                 width: UInt16(size.width), height: UInt16(size.height), config: record.serialized())
        let encoder = LadderEncoder(ladder: settings.ladder, settings: settings)
        var outputs: [WireMessage] = []
        let clock = ContinuousClock()
        let started = clock.now
        outputs += try encoder.handle(.streamAnnounce(StreamAnnounce(streamID: 1, sessionID: 1, tenant: "bench", streamName: "bench", discontinuity: false, tracks: [source])))
        for (i, unit) in units.enumerated() {
            let body = unit.filter { ![NALUnit.sps, NALUnit.pps].contains(NALUnit.type($0)) }
            let keyframe = unit.contains { NALUnit.type($0) == NALUnit.idr }
            let ms = Int64(i) * 1000 / Int64(frameRate)
            outputs += try encoder.handle(.accessUnit(AccessUnit(streamID: 1, trackID: 1, flags: keyframe ? AccessUnit.keyframeFlag : 0,
                                                                 sequence: UInt64(i), dts: ms, compositionOffset: 0, data: NALUnit.lengthPrefixed(body))))
        }
        outputs += try encoder.handle(.streamEnd(StreamEnd(streamID: 1, reason: "benchmark done")))
        let seconds = (clock.now - started) / .seconds(1)
        return Result(sourceFrames: units.count, seconds: seconds, renditions: try renditions(outputs))
    }

    /// Each announced video track's units back to Annex B, parameter sets before each IDR.
    static func renditions(_ outputs: [WireMessage]) throws -> [Rendition] {
        var tracks: [UInt8: (config: TrackConfig, sets: [[UInt8]], bytes: [UInt8])] = [:]
        var order: [UInt8] = []
        for message in outputs {
            switch message {
            case .streamAnnounce(let a):
                for t in a.tracks where t.kind == .video && tracks[t.trackID] == nil {
                    let record = try AVCDecoderConfigurationRecord(parsing: t.config)
                    tracks[t.trackID] = (t, record.sequenceParameterSets + record.pictureParameterSets, [])
                    order.append(t.trackID)
                }
            case .accessUnit(let u):
                guard var track = tracks[u.trackID] else { continue }
                let nals = (u.isKeyframe ? track.sets : []) + (try NALUnit.splitLengthPrefixed(u.data))
                for nal in nals { track.bytes += [0, 0, 0, 1] + nal }
                tracks[u.trackID] = track
            default:
                break
            }
        }
        return order.compactMap { id in
            tracks[id].map { Rendition(name: $0.config.name, width: Int($0.config.width), height: Int($0.config.height), annexB: $0.bytes) }
        }
    }
}
