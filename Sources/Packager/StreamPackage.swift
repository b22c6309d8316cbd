import Foundation
import FMP4
import HLS
import MediaFormats
import StorecastWire

/// One rendition as served: its init segment and a rolling window of segments.
///
/// A track that changes mid-stream (new resolution or codec configuration) gets a new init
/// segment version; segments keep the version they were written against, so the playlist
/// changes EXT-X-MAP where they change, and older versions stay servable while listed.
public struct RenditionPackage: Sendable {
    public var track: TrackConfig
    public var codecString: String
    /// The current init segment, version `initVersion`.
    public var initSegment: [UInt8]
    public var initVersion = 0
    /// Earlier init segments that listed segments still use.
    public var olderInitSegments: [Int: [UInt8]] = [:]
    public var segments: [PackagedSegment] = []
    public var discontinuitySequence = 0
    /// The discontinuity sequence of the newest listed segment.
    public var edgeDiscontinuitySequence: Int { discontinuitySequence + listedSegments.filter(\.discontinuity).count }
    public var ended = false
    /// Dropped by the transcoder (shed under load, or gone from a new ladder): out of the
    /// multivariant playlist, its media playlist ended.
    public var retired = false

    /// The window's segments that hold media (gap segments, ``ResumedGap``, have none).
    private var mediaSegments: [PackagedSegment] { segments.filter { !$0.gap } }

    /// Measured average bits per second over the window.
    public var averageBitrate: Int? {
        let media = mediaSegments
        let seconds = media.reduce(0) { $0 + $1.duration }
        guard seconds > 0 else { return nil }
        return Int(Double(media.reduce(0) { $0 + $1.bytes.count }) * 8 / seconds)
    }

    /// The highest bit rate of a segment in the window (BANDWIDTH in RFC 8216 terms).
    public var peakBitrate: Int? {
        mediaSegments.filter { $0.duration > 0 }.map { Int(Double($0.bytes.count) * 8 / $0.duration) }.max()
    }

    public var measuredFrameRate: Double? {
        let media = mediaSegments
        let seconds = media.reduce(0) { $0 + $1.duration }
        guard track.kind == .video, seconds > 0 else { return nil }
        return Double(media.reduce(0) { $0 + $1.sampleCount }) / seconds
    }

    /// Parts of the segment being written (its media sequence number is the next one).
    public var openParts: [PackagedPart] = []
    /// The part being written, as far as its chunks are out.
    public var partInProgress: PartChunk?
    /// Segments that left the in-memory window but are still in the DVR window: listed, their
    /// bytes on disk (`DVRArchive`); `bytes` is empty here.
    public var archived: [PackagedSegment] = []
    /// Every segment the media playlist lists: the DVR window's, then the live window's.
    public var listedSegments: [PackagedSegment] { archived + segments }
    /// Segments the playlist no longer lists that stay fetchable (RFC 8216 6.2.2: for the
    /// segment's duration plus that of the longest playlist that listed it), so a player that
    /// read the playlist just before one slid out still gets its first entry. In memory, or, out
    /// of the DVR window, on disk (`bytes` empty) until their files can go.
    public var departed: [DepartedSegment] = []
    /// Seconds of segments added so far: the live stream's clock for `departed`.
    public var addedDuration: Double = 0
    /// The longest segment ever added: EXT-X-TARGETDURATION must not change (RFC 8216 6.2.1), so
    /// it never shrinks back when that segment leaves the window.
    public var longestSegment: Double = 0

    /// The newest complete segment and the newest part, for blocking reload.
    public var edge: PlaylistEdge {
        let lastPart: (sequence: Int, index: Int)? = openParts.last.map { ($0.sequence, $0.index) }
            ?? segments.last.flatMap { s in s.parts.isEmpty ? nil : (s.sequence, s.parts.count - 1) }
        return PlaylistEdge(lastCompleteSequence: segments.last?.sequence, lastPart: lastPart, ended: ended)
    }

    /// A resumed rendition's hole before its first new segment, listed with that segment's first
    /// media (``ResumedGap``); the anchor places it on the package's clock.
    var resumedGap: (gap: ResumedGap, anchor: ClockAnchor)?

    /// The media lost in a restart, as gap segments, before the first new media of a resumed
    /// rendition.
    private mutating func listResumedGap(before output: SegmenterOutput) {
        guard let (gap, anchor) = resumedGap else { return }
        let first: (sequence: Int, ticks: Int64)? = output.parts.first.map { ($0.sequence, $0.startTime) }
            ?? output.segment.map { ($0.sequence, $0.startTime) }
        guard let first else { return }
        resumedGap = nil
        let start = anchor.wallSeconds + Double(first.ticks) / Double(track.timescale) - anchor.streamSeconds
        for s in gap.segments(before: first.sequence, startingAt: start, initVersion: initVersion) where segments.last.map({ $0.sequence < s.sequence }) ?? true {
            segments.append(s)
            addedDuration += s.duration
        }
    }

    /// Takes what the segmenter produced: parts join the open segment, a finished segment
    /// replaces them. Keeps `window` segments in memory; with a DVR window (seconds) older ones
    /// stay listed as archived until the listed total passes it. A segment that leaves the
    /// playlist stays fetchable in `departed` for a while. Returns the sequences whose files can
    /// go (out of the DVR window and out of `departed`).
    @discardableResult
    public mutating func add(_ output: SegmenterOutput, window: Int, dvrWindow: Double = 0) -> [Int] {
        listResumedGap(before: output)
        for c in output.chunks {
            if var p = partInProgress, p.sequence == c.sequence, p.index == c.index, p.offset + p.bytes.count == c.offset {
                partInProgress = nil  // no second reference while appending
                p.bytes += c.bytes
                partInProgress = p
            } else if c.offset == 0 {
                partInProgress = PartChunk(sequence: c.sequence, index: c.index, offset: 0, bytes: c.bytes)
            }
        }
        for p in output.parts where partInProgress?.sequence == p.sequence && partInProgress?.index == p.index { partInProgress = nil }
        openParts += output.parts
        guard var segment = output.segment else { return [] }
        openParts.removeAll { $0.sequence <= segment.sequence }
        segment.initVersion = initVersion
        segments.append(segment)
        addedDuration += segment.duration
        longestSegment = max(longestSegment, segment.duration)
        // What the playlist listed before anything leaves: the longest playlist a leaving segment was in.
        var listed = listedSegments.reduce(0) { $0 + $1.duration }
        let longest = listed
        while segments.count > window {
            var old = segments.removeFirst()
            if dvrWindow > 0 {
                old.bytes = []
                old.parts = []
                archived.append(old)
            } else {
                listed -= old.duration
                depart(old, listedFor: longest)
            }
        }
        while let first = archived.first, listed - first.duration >= dvrWindow {
            archived.removeFirst()
            listed -= first.duration
            depart(first, listedFor: longest)
        }
        var dropped: [Int] = []
        while let first = departed.first, first.until <= addedDuration {
            departed.removeFirst()
            if first.segment.bytes.isEmpty { dropped.append(first.segment.sequence) }
        }
        if !olderInitSegments.isEmpty {
            let used = Set(listedSegments.map(\.initVersion) + departed.map(\.segment.initVersion))
            olderInitSegments = olderInitSegments.filter { used.contains($0.key) }
        }
        return dropped
    }

    private mutating func depart(_ segment: PackagedSegment, listedFor playlistDuration: Double) {
        if segment.discontinuity { discontinuitySequence += 1 }
        departed.append(DepartedSegment(segment: segment, until: addedDuration + segment.duration + playlistDuration))
    }

    /// The track changed (a new resolution or codec configuration): `fresh` describes it. Listed
    /// segments stay, with their init segment; what comes next uses the new one.
    public mutating func reconfigure(_ fresh: RenditionPackage) {
        if fresh.initSegment != initSegment {
            if listedSegments.contains(where: { $0.initVersion == initVersion }) { olderInitSegments[initVersion] = initSegment }
            initVersion += 1
            initSegment = fresh.initSegment
        }
        track = fresh.track
        codecString = fresh.codecString
        ended = false
        retired = false
    }

    /// An init segment by version, while it is current or a listed segment uses it.
    public func initSegment(version: Int) -> [UInt8]? {
        version == initVersion ? initSegment : olderInitSegments[version]
    }

    /// An archived segment's entry (its bytes are on disk): listed, or departed from the DVR
    /// window and not yet expired.
    public func archivedSegment(_ sequence: Int) -> PackagedSegment? {
        (Self.find(sequence, in: archived) ?? departedSegment(sequence).flatMap { $0.bytes.isEmpty ? $0 : nil }).flatMap { $0.gap ? nil : $0 }
    }

    /// A segment whose bytes are in memory: in the live window, or departed from it and not yet
    /// expired (never a gap segment: it has no media).
    public func segment(_ sequence: Int) -> PackagedSegment? {
        (Self.find(sequence, in: segments) ?? departedSegment(sequence).flatMap { $0.bytes.isEmpty ? nil : $0 }).flatMap { $0.gap ? nil : $0 }
    }

    private func departedSegment(_ sequence: Int) -> PackagedSegment? {
        guard let first = departed.first?.segment.sequence, sequence >= first else { return nil }
        return departed.first { $0.segment.sequence == sequence }?.segment
    }

    /// Sequence numbers run consecutively, so the position is known; a scan covers any gap.
    private static func find(_ sequence: Int, in list: [PackagedSegment]) -> PackagedSegment? {
        guard let first = list.first, sequence >= first.sequence, sequence - first.sequence < list.count else { return nil }
        let s = list[sequence - first.sequence]
        return s.sequence == sequence ? s : list.first { $0.sequence == sequence }
    }

    /// A part's bytes: from the open segment, or sliced out of a finished one.
    public func part(_ sequence: Int, _ index: Int) -> [UInt8]? {
        partBytes(sequence, index).map(Array.init)
    }

    /// The bytes of an init segment, a segment in memory or a part, not copied out of their
    /// segment (the hot paths write them once, into the answer).
    public func mediaBytes(_ resource: PlaylistURIs.Resource) -> ArraySlice<UInt8>? {
        switch resource {
        case .initSegment(let version): initSegment(version: version)?[...]
        case .segment(let n): segment(n)?.bytes[...]
        case .part(let m, let i): partBytes(m, i)
        }
    }

    /// A part's bytes without copying them out of their segment (the hot paths write them once,
    /// into the answer).
    public func partBytes(_ sequence: Int, _ index: Int) -> ArraySlice<UInt8>? {
        if let open = openParts.first(where: { $0.sequence == sequence && $0.index == index }) { return open.bytes[...] }
        guard let s = segment(sequence), index < s.parts.count else { return nil }
        let r = s.parts[index]
        return s.bytes[r.offset..<(r.offset + r.length)]
    }

    /// The media playlist. `query` is appended to every URI (a playback token); parts are listed
    /// for the last `partSegments` segments when `lowLatency` is set.
    /// `dateRanges` are the stream's product cards; those that ended before the first listed
    /// segment are left out.
    public func mediaPlaylist(targetDuration: Double, lowLatency: LowLatencySettings?, query: String = "", skip: Bool = false, reports: [RenditionReport] = [], dateRanges: [DateRange] = []) -> String {
        let uri = PlaylistURIs(query: query)
        let partsFrom = (segments.last?.sequence ?? 0) - (lowLatency?.partSegments ?? 0) + 1
        let all = listedSegments
        let listed = all.enumerated().map { i, s in
            PlaylistSegment(
                sequence: s.sequence, duration: s.duration, uri: uri.segment(s.sequence), discontinuity: s.discontinuity, gap: s.gap,
                programDateTime: s.programDateTime.map(ProgramDateTime.format),
                parts: lowLatency != nil && s.sequence >= partsFrom ? s.parts.enumerated().map { PlaylistPart(duration: $1.duration, uri: uri.part(s.sequence, $0), independent: $1.independent) } : [],
                mapURI: i > 0 && all[i - 1].initVersion != s.initVersion ? uri.initSegment(s.initVersion) : nil)
        }
        // RFC 8216 4.3.3.1: every EXTINF rounded to the nearest integer is <= the target; 6.2.1:
        // the target does not change, so it covers every segment so far, not only those listed.
        let target = max(Int(targetDuration.rounded()), Int(max(longestSegment, all.map(\.duration).max() ?? 0).rounded()), 1)
        var playlist = MediaPlaylist(targetDuration: target, mapURI: uri.initSegment(all.first?.initVersion ?? initVersion), segments: listed, discontinuitySequence: discontinuitySequence, ended: ended)
        if let first = all.first?.programDateTime {
            playlist.dateRanges = dateRanges.filter { ($0.endDate(among: dateRanges) ?? .infinity) >= first }
        }
        if let ll = lowLatency {
            let skipBoundary = Double(target) * 6
            playlist.partTarget = ll.partTarget
            playlist.serverControl = ServerControl(canBlockReload: true, canSkipUntil: skipBoundary, partHoldBack: ll.partHoldBack)
            playlist.trailingParts = openParts.map { PlaylistPart(duration: $0.duration, uri: uri.part($0.sequence, $0.index), independent: $0.independent) }
            playlist.trailingDiscontinuity = openParts.first?.discontinuity ?? false
            if let last = all.last, last.initVersion != initVersion { playlist.trailingMapURI = uri.initSegment(initVersion) }
            if !ended {
                let next = openParts.last.map { ($0.sequence, $0.index + 1) } ?? ((segments.last?.sequence ?? -1) + 1, 0)
                playlist.preloadHintURI = uri.part(next.0, next.1)
                playlist.renditionReports = reports
            }
            if skip { playlist.skippedSegments = MediaPlaylist.skippableSegments(durations: all.map(\.duration), skipBoundary: skipBoundary) }
        }
        return playlist.render()
    }
}

/// A segment out of the playlist, fetchable until the rendition's `addedDuration` reaches `until`.
public struct DepartedSegment: Sendable, Equatable {
    public var segment: PackagedSegment
    public var until: Double
}

/// Low-Latency HLS settings of the origin.
public struct LowLatencySettings: Sendable, Equatable {
    /// EXT-X-PART-INF PART-TARGET, seconds (0.2 to 0.5).
    public var partTarget: Double
    /// Segments at the live edge whose parts are listed (the draft drops parts more than three
    /// target durations from the end).
    public var partSegments = 3
    /// PART-HOLD-BACK: three part targets as written in the playlist (1/3 s is written 0.334),
    /// the draft's recommended minimum.
    public var partHoldBack: Double { MediaPlaylist.writtenPartTarget(partTarget) * 3 }
    public init(partTarget: Double) { self.partTarget = partTarget }
}

/// Everything the packager serves for one live stream.
public struct StreamPackage: Sendable {
    public var streamID: Int64
    public var tenant: String
    public var name: String
    public var renditions: [String: RenditionPackage]
    /// The directory the multivariant playlist puts the renditions under
    /// (`live/T/S/GENERATION/360p/index.m3u8`), new whenever the package is made afresh: a show
    /// after the previous one left memory, or a packager that restarted, numbers its media from 1
    /// again, and media are served immutable, so the same URL must never name other bytes.
    /// Empty: no directory (tests; recordings on disk).
    public var generation = ""
    public var ended = false
    /// The latest preview still (JPEG) from the transcoder.
    public var thumbnail: Thumbnail?
    /// The publish session whose media it shows now (its latest announce's).
    public var sessionID: Int64 = 0
    /// Product cards posted on the stream's current session (``HighlightBook``), oldest first:
    /// EXT-X-DATERANGE tags in every media playlist.
    public var highlights: [DateRange] = []

    /// Names of the video renditions, best first.
    public var videoRenditions: [RenditionPackage] {
        renditions.values.filter { $0.track.kind == .video }.sorted { $0.track.height > $1.track.height }
    }

    public var audioRendition: RenditionPackage? { renditions.values.first { $0.track.kind == .audio } }

    /// Playable once every announced rendition has a segment: a player that fetched the
    /// multivariant playlist earlier could pick a variant or audio group whose media playlist
    /// is still empty, which some players (Chromium's native HLS) treat as a parse error.
    /// The passed-through source keeps the publisher's keyframes, so its first segment can take a
    /// whole GOP: it joins the multivariant playlist once it has one, and is not waited for.
    public var isReady: Bool {
        // A rung retired before its first segment never gets one: not waited for either.
        let live = renditions.values.filter { !$0.retired }
        let ladder = live.filter { !$0.track.isSource }
        let awaited = ladder.contains { $0.track.kind == .video } ? ladder : live
        return !awaited.isEmpty && awaited.allSatisfy { !$0.segments.isEmpty }
    }

    /// The live edge of every other rendition of the same kind (EXT-X-RENDITION-REPORT).
    public func renditionReports(besides name: String, query: String = "") -> [RenditionReport] {
        guard let kind = renditions[name]?.track.kind else { return [] }
        return renditions.values.filter { $0.track.name != name && $0.track.kind == kind && !$0.retired && !$0.segments.isEmpty }
            .sorted { $0.track.height > $1.track.height }
            .map { r in
                let edge = r.edge
                return RenditionReport(uri: "../\(r.track.name)/index.m3u8\(query)", lastSequence: edge.lastSequence, lastPart: edge.lastPart.flatMap { $0.sequence == edge.lastSequence ? $0.index : nil })
            }
    }

    /// A generation for a package made at `date`: its milliseconds since 1970 in base 36.
    public static func generation(at date: Date) -> String {
        String(Int64((date.timeIntervalSince1970 * 1000).rounded(.down)), radix: 36)
    }

    /// The multivariant playlist. `inGeneration`: rendition URIs go through the generation's
    /// directory (live serving); without it they are bare (recordings).
    public func multivariantPlaylist(query: String = "", inGeneration: Bool = false) -> String {
        let dir = inGeneration && !generation.isEmpty ? "\(generation)/" : ""
        let audio = audioRendition
        let videos = videoRenditions.filter { !$0.segments.isEmpty && !$0.retired }
        if videos.isEmpty, let audio, !audio.segments.isEmpty {
            return MultivariantPlaylist.render(variants: [VariantStream(
                uri: "\(dir)\(audio.track.name)/index.m3u8\(query)", bandwidth: Int(audio.track.bitrate) + 16_000,
                averageBandwidth: audio.averageBitrate, codecs: [audio.codecString])])
        }
        let audioBandwidth = audio.map { Int($0.track.bitrate) } ?? 0
        let variants = videos.map { v in
            VariantStream(
                uri: "\(dir)\(v.track.name)/index.m3u8\(query)",
                bandwidth: max(Int(Double(v.track.bitrate) * 1.1), v.peakBitrate ?? 0) + audioBandwidth,
                averageBandwidth: v.averageBitrate.map { $0 + (audio?.averageBitrate ?? 0) },
                width: Int(v.track.width), height: Int(v.track.height),
                frameRate: v.measuredFrameRate,
                codecs: [v.codecString] + (audio.map { [$0.codecString] } ?? []),
                audioGroup: audio == nil ? nil : "audio")
        }
        let groups = audio.map { [AudioRendition(groupID: "audio", name: "Main", uri: "\(dir)\($0.track.name)/index.m3u8\(query)", channels: Int($0.track.channels))] } ?? []
        return MultivariantPlaylist.render(variants: variants, audio: groups)
    }
}

extension RenditionPackage {
    /// Builds the init segment and codecs string for a track announced by a transcoder.
    public init(track: TrackConfig) throws {
        self.track = track
        switch track.kind {
        case .video where track.codec == "hevc" || track.codec == "h265":
            let record = try HEVCDecoderConfigurationRecord(parsing: track.config)
            codecString = record.codecString
            initSegment = InitSegment.make(TrackDescription(timescale: track.timescale, media: .hevc(hvcC: track.config, width: Int(track.width), height: Int(track.height)), bitrate: track.bitrate))
        case .video:
            let record = try AVCDecoderConfigurationRecord(parsing: track.config)
            codecString = record.codecString
            initSegment = InitSegment.make(TrackDescription(timescale: track.timescale, media: .h264(avcC: track.config, width: Int(track.width), height: Int(track.height)), bitrate: track.bitrate))
        case .audio:
            let asc = try AudioSpecificConfig(parsing: track.config)
            codecString = asc.codecString
            initSegment = InitSegment.make(TrackDescription(timescale: track.timescale, media: .aac(audioSpecificConfig: track.config, sampleRate: asc.sampleRate, channels: asc.channels), bitrate: track.bitrate))
        }
    }
}
