import Crypto
import Foundation
import MediaFormats
import RTMP

/// An RTMP publisher that behaves as HaishinKit does, from its RTMPConnection/RTMPStream/
/// RTMPChunk sources (no iOS device here to capture one). Used where no real publisher here can
/// send what is under test (ffmpeg 5.1 and GStreamer 1.22 have no Enhanced RTMP).
///
/// - ``Shape/haishinKit2``: plain handshake; `connect` with the Enhanced RTMP `fourCcList`; Set
///   Chunk Size 8192 after the connect result; no releaseStream/FCPublish; `createStream`;
///   `publish` with transaction 0; `@setDataFrame` (an ECMA array whose count says 0) on chunk
///   stream 8; audio on 4, video on 5; HEVC as Enhanced RTMP (`0x90 'hvc1'` sequence start,
///   `0x91`/`0xA1` coded frames).
/// - ``Shape/haishinKit1`` (before 1.8.1): no `fourCcList`; the server's Window Acknowledgement
///   Size echoed before the connect result; `FCPublish` right after the createStream result and
///   just before `publish` (its flashVer says FMLE), with transaction ids counting on;
///   `@setDataFrame` as an AMF0 object; audio and data share chunk stream 8, video on 9.
/// - ``Shape/larix``: Larix Broadcaster as `LarixTranscriptTests` (RTMPTests) sets out from
///   public sources (SRS and joy4 issues, nginx-rtmp dumps, Softvelum's public SDK headers):
///   digest handshake; Set Chunk Size 65535 before `connect`; flashVer "FMLE/3.0 (compatible;
///   Larix/nul" as nginx-rtmp shows it; `@setDataFrame` with no frame rate. The rest is an
///   assumption labelled there (FMLE-style connect fields, `publish` with transaction 0 on
///   chunk stream 8, an AMF0 object with string codec ids on chunk stream 4, video on 5, audio
///   on 6), and so is its strictness: a `_result` or `_error` it did not ask for, or a
///   createStream result other than `_result, 2, null, <number>`, fails the publish. How it
///   stops is in no public source: it sends deleteStream here.
final class ScriptedPublisher {
    struct Failure: Error, CustomStringConvertible { let description: String }

    enum Shape: Sendable { case haishinKit2, haishinKit1, larix }

    struct Frame {
        var timestamp: UInt32
        var payload: [UInt8]
        var isVideo: Bool
        /// When to send it, in ms after the first frame (real-time publishing); nil: at its
        /// timestamp. Apart from the timestamp for a publisher whose clock jumps.
        var sendAt: UInt32? = nil
    }

    private let fd: Int32
    private var encoder = ChunkEncoder()
    private var decoder = ChunkDecoder()

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &addr) { p in p.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard rc == 0 else { close(fd); throw Failure(description: "connect failed") }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    private func write(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw Failure(description: "send failed") }
            offset += n
        }
    }

    private func read(_ count: Int) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        var got = 0
        while got < count {
            let n = out[got...].withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { throw Failure(description: "connection closed by the server") }
            got += n
        }
        return out
    }

    private func send(_ message: RTMPMessage) throws { try write(encoder.encode(message)) }

    /// Reads server messages until a command named `name` (with `transaction` if given) arrives.
    /// `strict`: any other `_result` or `_error` fails the publish (the strict client's rule).
    private func expect(_ name: String, transaction: Double? = nil, strict: Bool = false) throws -> [AMF0Value] {
        while true {
            while let m = try decoder.nextMessage() {
                guard m.type == .amf0Command, let values = try? AMF0.decodeAll(m.payload) else { continue }
                if values.first == .string("onStatus"), values.count > 3, values[3]["level"] == .string("error") {
                    throw Failure(description: "refused: \(values[3]["code"]?.stringValue ?? "?") \(values[3]["description"]?.stringValue ?? "")")
                }
                if values.first == .string(name), transaction == nil || values[1] == .number(transaction!) { return values }
                if strict, values.first == .string("_result") || values.first == .string("_error") {
                    throw Failure(description: "unknown command \(values[0]) response while waiting for \(name): \(values)")
                }
            }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { throw Failure(description: "connection closed while waiting for \(name)") }
            decoder.feed(chunk[..<n])
        }
    }

    func publish(app: String, key: String, port: Int, frames: [Frame], shape: Shape = .haishinKit2, realTime: Bool = true) throws {
        // Handshake: C1 = time, zeros, random (Larix: a digest C1); C2 echoes S1.
        let random = (0..<1528).map { _ in UInt8.random(in: 0...255) }
        let c1 = shape == .larix
            ? DigestHandshake(hmac: { key, message in Array(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key))) })
                .c1(scheme: .offsetAt8, time: 0, version: [0x0A, 0x00, 0x00, 0x01], random: random)
            : [0, 0, 0, 0, 0, 0, 0, 0] + random
        try write([3] + c1)
        let s0s1s2 = try read(1 + 2 * 1536)
        try write(Array(s0s1s2[1...1536]))
        if shape == .larix { return try publishAsLarix(app: app, key: key, port: port, frames: frames, realTime: realTime) }

        var properties: [(String, AMF0Value)] = [
            ("app", .string(app)), ("flashVer", .string("FMLE/3.0 (compatible; FMSc/1.0)")), ("swfUrl", .null),
            ("tcUrl", .string("rtmp://127.0.0.1:\(port)/\(app)")), ("fpad", .boolean(false)), ("capabilities", .number(239)),
            ("audioCodecs", .number(1024)), ("videoCodecs", .number(128)), ("videoFunction", .number(1)), ("pageUrl", .null),
            ("objectEncoding", .number(0)),
        ]
        if shape == .haishinKit2 {
            properties += [("fourCcList", .strictArray([.string("hvc1"), .string("Opus")])),
                           ("videoFourCcInfoMap", .object([("hvc1", .number(3))])), ("capsEx", .number(0))]
        }
        try send(.command([.string("connect"), .number(1), .object(properties)]))
        if shape == .haishinKit1 {
            // 1.x answers the server's Window Acknowledgement Size as soon as it arrives, before
            // the connect result.
            try send(.windowAcknowledgementSize(2_500_000))
        }
        _ = try expect("_result", transaction: 1)
        try send(.setChunkSize(8192))
        encoder.setChunkSize(8192)
        try send(.command([.string("createStream"), .number(2), .null]))
        let created = try expect("_result", transaction: 2)
        let streamID = UInt32(created.last?.numberValue ?? 1)
        var publishTransaction = 0.0
        if shape == .haishinKit1 {
            // The publish was queued first and took transaction 3; FCPublish, written before it, 4.
            try send(.command([.string("FCPublish"), .number(4), .null, .string(key)]))
            publishTransaction = 3
        }
        try send(RTMPMessage(chunkStreamID: 3, timestamp: 0, typeID: RTMPMessageType.amf0Command.rawValue, messageStreamID: streamID,
                             payload: AMF0.encode([.string("publish"), .number(publishTransaction), .null, .string(key), .string("live")])))
        while true {
            let status = try expect("onStatus")
            if status.count > 3, status[3]["code"] == .string("NetStream.Publish.Start") { break }
        }
        let metadata: [(String, AMF0Value)] = [("duration", .number(0)), ("width", .number(320)), ("framerate", .number(30))]
        // 2.x writes the ECMA array's count from an empty dictionary: 0, whatever follows.
        var metadataPayload = AMF0.encode([.string("@setDataFrame"), .string("onMetaData")])
        switch shape {
        case .haishinKit2: metadataPayload += [0x08, 0, 0, 0, 0] + AMF0.encode([.object(metadata)]).dropFirst()
        case .haishinKit1, .larix: metadataPayload += AMF0.encode([.object(metadata)])
        }
        let audioChunkStream: UInt32 = shape == .haishinKit1 ? 8 : 4
        let videoChunkStream: UInt32 = shape == .haishinKit1 ? 9 : 5
        try send(RTMPMessage(chunkStreamID: 8, timestamp: 0, typeID: RTMPMessageType.amf0Data.rawValue, messageStreamID: streamID, payload: metadataPayload))
        try sendMedia(frames, streamID: streamID, audioChunkStream: audioChunkStream, videoChunkStream: videoChunkStream, realTime: realTime)
        try send(RTMPMessage(chunkStreamID: 3, timestamp: 0, typeID: RTMPMessageType.amf0Command.rawValue, messageStreamID: streamID,
                             payload: AMF0.encode([.string("closeStream"), .number(0), .null])))
        try send(.command([.string("deleteStream"), .number(3), .null, .number(Double(streamID))]))
    }

    private func publishAsLarix(app: String, key: String, port: Int, frames: [Frame], realTime: Bool) throws {
        try send(.setChunkSize(65535))
        encoder.setChunkSize(65535)
        try send(.command([.string("connect"), .number(1), .object([
            ("app", .string(app)), ("tcUrl", .string("rtmp://127.0.0.1:\(port)/\(app)")), ("flashVer", .string("FMLE/3.0 (compatible; Larix/nul")),
            ("fpad", .boolean(false)), ("capabilities", .number(15)), ("audioCodecs", .number(1028)), ("videoCodecs", .number(128)), ("videoFunction", .number(1)),
        ])]))
        _ = try expect("_result", transaction: 1, strict: true)
        try send(.command([.string("createStream"), .number(2), .null]))
        let created = try expect("_result", transaction: 2, strict: true)
        guard created.count == 4, created[2] == .null, let id = created[3].numberValue else {
            throw Failure(description: "createStream result is not _result, 2, null, <number>: \(created)")
        }
        let streamID = UInt32(id)
        try send(RTMPMessage(chunkStreamID: 8, timestamp: 0, typeID: RTMPMessageType.amf0Command.rawValue, messageStreamID: streamID,
                             payload: AMF0.encode([.string("publish"), .number(0), .null, .string(key), .string("live")])))
        while true {
            let status = try expect("onStatus", strict: true)
            guard status.count >= 4, status[2] == .null else { throw Failure(description: "onStatus is not onStatus, n, null, {…}: \(status)") }
            if status[3]["code"] == .string("NetStream.Publish.Start") { break }
        }
        try send(RTMPMessage(chunkStreamID: 4, timestamp: 0, typeID: RTMPMessageType.amf0Data.rawValue, messageStreamID: streamID, payload: AMF0.encode([
            .string("@setDataFrame"), .string("onMetaData"), .object([
                ("width", .number(320)), ("height", .number(240)), ("videodatarate", .number(500)), ("videocodecid", .string("avc1")),
                ("audiosamplerate", .number(44100)), ("audiodatarate", .number(128)), ("audiosamplesize", .number(16)),
                ("stereo", .boolean(false)), ("audiocodecid", .string("mp4a")),
            ]),
        ])))
        try sendMedia(frames, streamID: streamID, audioChunkStream: 6, videoChunkStream: 5, realTime: realTime)
        try send(RTMPMessage(chunkStreamID: 3, timestamp: 0, typeID: RTMPMessageType.amf0Command.rawValue, messageStreamID: 0,
                             payload: AMF0.encode([.string("deleteStream"), .number(0), .null, .number(Double(streamID))])))
    }

    private func sendMedia(_ frames: [Frame], streamID: UInt32, audioChunkStream: UInt32, videoChunkStream: UInt32, realTime: Bool) throws {
        let start = Date()
        for frame in frames {
            if realTime {
                let due = start.addingTimeInterval(Double(frame.sendAt ?? frame.timestamp) / 1000)
                let wait = due.timeIntervalSinceNow
                if wait > 0 { usleep(UInt32(wait * 1_000_000)) }
            }
            try send(RTMPMessage(chunkStreamID: frame.isVideo ? videoChunkStream : audioChunkStream, timestamp: frame.timestamp,
                                 typeID: frame.isVideo ? RTMPMessageType.video.rawValue : RTMPMessageType.audio.rawValue,
                                 messageStreamID: streamID, payload: frame.payload))
        }
    }

    /// Runs `publish` on its own thread (blocking sockets stay off the cooperative pool).
    static func run(port: Int, app: String = "live", key: String, frames: [Frame], shape: Shape = .haishinKit2) async throws {
        try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
            let thread = Thread {
                c.resume(with: Result { try ScriptedPublisher(port: port).publish(app: app, key: key, port: port, frames: frames, shape: shape) })
            }
            thread.start()
        }
    }
}

/// Media for the scripted publisher, made with the real encoders (libx265, FFmpeg's AAC).
enum ScriptedMedia {
    /// HEVC as Enhanced RTMP tags: one sequence start, then a frame every 1/30 s.
    static func hevc(width: Int, height: Int, seconds: Int, directory: URL) async throws -> [ScriptedPublisher.Frame] {
        let file = directory.appendingPathComponent("source-\(width)x\(height).hevc")
        let (status, output) = try await ServiceProcess.run(try TestEnvironment.which("ffmpeg"), [
            "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=\(width)x\(height):rate=30", "-t", "\(seconds)",
            "-c:v", "libx265", "-preset", "ultrafast", "-x265-params", "aud=1:bframes=0:keyint=60:min-keyint=60:scenecut=0:log-level=error",
            "-f", "hevc", file.path,
        ])
        guard status == 0 else { throw TestEnvironment.Failure(description: "x265 failed: \(output)") }
        let nals = NALUnit.splitAnnexB(Array(try Data(contentsOf: file)))
        func type(_ n: [UInt8]) -> UInt8 { (n[0] >> 1) & 0x3F }
        guard let vps = nals.first(where: { type($0) == 32 }), let sps = nals.first(where: { type($0) == 33 }), let pps = nals.first(where: { type($0) == 34 }) else {
            throw TestEnvironment.Failure(description: "no parameter sets in the x265 output")
        }
        let hvcC = try HEVCDecoderConfigurationRecord(vps: vps, sps: sps, pps: pps).serialized()
        var frames = [ScriptedPublisher.Frame(timestamp: 0, payload: [0x90] + Array("hvc1".utf8) + hvcC, isVideo: true)]
        let accessUnits = Self.accessUnits(nals, type: type, delimiter: 35, leavingOut: [32, 33, 34])
        for (i, au) in accessUnits.enumerated() where !au.isEmpty {
            let key = au.contains { (16...21).contains(type($0)) }
            frames.append(.init(timestamp: UInt32(i * 1000 / 30), payload: [key ? 0x91 : 0xA1] + Array("hvc1".utf8) + [0, 0, 0] + NALUnit.lengthPrefixed(au), isVideo: true))
        }
        return frames
    }

    /// H.264 as classic FLV video tags (libx264, a keyframe every 30 frames): the AVC sequence
    /// header, then a frame every 1/30 s.
    static func h264(width: Int, height: Int, seconds: Int, directory: URL) async throws -> [ScriptedPublisher.Frame] {
        let file = directory.appendingPathComponent("source-\(width)x\(height).h264")
        let (status, output) = try await ServiceProcess.run(try TestEnvironment.which("ffmpeg"), [
            "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=\(width)x\(height):rate=30", "-t", "\(seconds)",
            "-c:v", "libx264", "-preset", "ultrafast", "-bf", "0", "-g", "30", "-x264-params", "scenecut=0:aud=1", "-f", "h264", file.path,
        ])
        guard status == 0 else { throw TestEnvironment.Failure(description: "x264 failed: \(output)") }
        let nals = NALUnit.splitAnnexB(Array(try Data(contentsOf: file)))
        func type(_ n: [UInt8]) -> UInt8 { n[0] & 0x1F }
        guard let sps = nals.first(where: { type($0) == 7 }), let pps = nals.first(where: { type($0) == 8 }) else {
            throw TestEnvironment.Failure(description: "no parameter sets in the x264 output")
        }
        let avcC = try AVCDecoderConfigurationRecord(sequenceParameterSets: [sps], pictureParameterSets: [pps]).serialized()
        var frames = [ScriptedPublisher.Frame(timestamp: 0, payload: [0x17, 0x00, 0, 0, 0] + avcC, isVideo: true)]
        let accessUnits = Self.accessUnits(nals, type: type, delimiter: 9, leavingOut: [6, 7, 8])
        for (i, au) in accessUnits.enumerated() where !au.isEmpty {
            let key = au.contains { type($0) == 5 }
            frames.append(.init(timestamp: UInt32(i * 1000 / 30), payload: [key ? 0x17 : 0x27, 0x01, 0, 0, 0] + NALUnit.lengthPrefixed(au), isVideo: true))
        }
        return frames
    }

    /// NAL units grouped into access units at each delimiter (NAL type `delimiter`), without the
    /// types in `leavingOut` (parameter sets, which travel in the sequence header).
    static func accessUnits(_ nals: [[UInt8]], type: ([UInt8]) -> UInt8, delimiter: UInt8, leavingOut: Set<UInt8>) -> [[[UInt8]]] {
        var accessUnits: [[[UInt8]]] = []
        for nal in nals {
            if type(nal) == delimiter { accessUnits.append([]); continue }
            if leavingOut.contains(type(nal)) { continue }
            if accessUnits.isEmpty { accessUnits.append([]) }
            accessUnits[accessUnits.count - 1].append(nal)
        }
        return accessUnits
    }

    /// AAC-LC at 44.1 kHz as FLV audio tags (ADTS headers stripped).
    static func aac(seconds: Int, directory: URL) async throws -> [ScriptedPublisher.Frame] {
        let file = directory.appendingPathComponent("source.aac")
        let (status, output) = try await ServiceProcess.run(try TestEnvironment.which("ffmpeg"), [
            "-v", "error", "-y", "-f", "lavfi", "-i", "sine=sample_rate=44100", "-t", "\(seconds)", "-c:a", "aac", "-f", "adts", file.path,
        ])
        guard status == 0 else { throw TestEnvironment.Failure(description: "aac failed: \(output)") }
        let bytes = Array(try Data(contentsOf: file))
        var frames = [ScriptedPublisher.Frame(timestamp: 0, payload: [0xAF, 0x00, 0x12, 0x08], isVideo: false)]
        var i = 0, index = 0
        while i + 7 <= bytes.count, bytes[i] == 0xFF {
            let length = Int(bytes[i + 3] & 0x03) << 11 | Int(bytes[i + 4]) << 3 | Int(bytes[i + 5]) >> 5
            let header = bytes[i + 1] & 0x01 == 1 ? 7 : 9
            guard length > header, i + length <= bytes.count else { break }
            frames.append(.init(timestamp: UInt32(index * 1024 * 1000 / 44_100), payload: [0xAF, 0x01] + Array(bytes[(i + header)..<(i + length)]), isVideo: false))
            i += length
            index += 1
        }
        return frames
    }

    /// Opus at 48 kHz stereo as Enhanced RTMP audio (FourCC `Opus`): the OpusHead as sequence
    /// start, then one 20 ms packet per tag, read out of libopus's Ogg output.
    static func opus(seconds: Int, directory: URL) async throws -> [ScriptedPublisher.Frame] {
        let file = directory.appendingPathComponent("source.opus")
        let (status, output) = try await ServiceProcess.run(try TestEnvironment.which("ffmpeg"), [
            "-v", "error", "-y", "-f", "lavfi", "-i", "sine=sample_rate=48000", "-t", "\(seconds)", "-ac", "2",
            "-c:a", "libopus", "-frame_duration", "20", "-f", "ogg", file.path,
        ])
        guard status == 0 else { throw TestEnvironment.Failure(description: "libopus failed: \(output)") }
        let packets = oggPackets(Array(try Data(contentsOf: file)))
        guard packets.count > 2, packets[0].starts(with: Array("OpusHead".utf8)) else { throw TestEnvironment.Failure(description: "no OpusHead in the Ogg output") }
        let fourCC = Array("Opus".utf8)
        var frames = [ScriptedPublisher.Frame(timestamp: 0, payload: [0x90] + fourCC + packets[0], isVideo: false)]
        for (i, packet) in packets.dropFirst(2).enumerated() {  // after OpusHead and OpusTags
            frames.append(.init(timestamp: UInt32(i * 20), payload: [0x91] + fourCC + packet, isVideo: false))
        }
        return frames
    }

    /// The packets of an Ogg stream (RFC 3533): pages' segment tables joined into packets.
    static func oggPackets(_ bytes: [UInt8]) -> [[UInt8]] {
        var packets: [[UInt8]] = [], current: [UInt8] = [], i = 0
        while i + 27 <= bytes.count, Array(bytes[i..<(i + 4)]) == Array("OggS".utf8) {
            let count = Int(bytes[i + 26])
            guard i + 27 + count <= bytes.count else { break }
            var offset = i + 27 + count
            for lace in bytes[(i + 27)..<(i + 27 + count)] {
                guard offset + Int(lace) <= bytes.count else { return packets }
                current += bytes[offset..<(offset + Int(lace))]
                offset += Int(lace)
                if lace < 255 { packets.append(current); current = [] }
            }
            i = offset
        }
        return packets
    }

    /// Shifts frames later on the timeline (a second source appended after a first).
    static func shifted(_ frames: [ScriptedPublisher.Frame], by milliseconds: UInt32) -> [ScriptedPublisher.Frame] {
        frames.map { var f = $0; f.timestamp += milliseconds; return f }
    }

    /// Interleaves audio and video by timestamp (sequence headers first).
    static func interleave(_ a: [ScriptedPublisher.Frame], _ b: [ScriptedPublisher.Frame]) -> [ScriptedPublisher.Frame] {
        (a + b).enumerated().sorted { ($0.element.timestamp, $0.offset) < ($1.element.timestamp, $1.offset) }.map(\.element)
    }
}
