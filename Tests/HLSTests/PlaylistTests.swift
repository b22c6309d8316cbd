import HLS
import Testing

@Suite struct PlaylistTests {
    @Test func multivariantGolden() {
        let text = MultivariantPlaylist.render(
            variants: [
                VariantStream(uri: "360p/index.m3u8", bandwidth: 568_000, averageBandwidth: 512_179, width: 640, height: 360, frameRate: 30, codecs: ["avc1.64001E", "mp4a.40.2"], audioGroup: "audio"),
                VariantStream(uri: "480p/index.m3u8", bandwidth: 1_008_000, averageBandwidth: nil, width: 854, height: 480, frameRate: 29.97, codecs: ["avc1.64001F", "mp4a.40.2"], audioGroup: "audio"),
            ],
            audio: [AudioRendition(groupID: "audio", name: "Main", uri: "audio/index.m3u8", channels: 2)])
        #expect(text == """
        #EXTM3U
        #EXT-X-VERSION:7
        #EXT-X-INDEPENDENT-SEGMENTS
        #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="audio",NAME="Main",DEFAULT=YES,AUTOSELECT=YES,CHANNELS="2",URI="audio/index.m3u8"
        #EXT-X-STREAM-INF:BANDWIDTH=1008000,RESOLUTION=854x480,FRAME-RATE=29.970,CODECS="avc1.64001F,mp4a.40.2",AUDIO="audio"
        480p/index.m3u8
        #EXT-X-STREAM-INF:BANDWIDTH=568000,AVERAGE-BANDWIDTH=512179,RESOLUTION=640x360,FRAME-RATE=30.000,CODECS="avc1.64001E,mp4a.40.2",AUDIO="audio"
        360p/index.m3u8

        """)
    }

    @Test func mediaPlaylistGolden() {
        let text = MediaPlaylist(
            targetDuration: 2, mapURI: "init.mp4",
            segments: [
                PlaylistSegment(sequence: 41, duration: 2.002, uri: "seg-41.m4s"),
                PlaylistSegment(sequence: 42, duration: 1.5, uri: "seg-42.m4s", discontinuity: true, programDateTime: "2026-11-22T05:00:00.000Z"),
            ],
            discontinuitySequence: 3, ended: true).render()
        #expect(text == """
        #EXTM3U
        #EXT-X-VERSION:7
        #EXT-X-TARGETDURATION:2
        #EXT-X-MEDIA-SEQUENCE:41
        #EXT-X-DISCONTINUITY-SEQUENCE:3
        #EXT-X-MAP:URI="init.mp4"
        #EXTINF:2.00200,
        seg-41.m4s
        #EXT-X-DISCONTINUITY
        #EXT-X-PROGRAM-DATE-TIME:2026-11-22T05:00:00.000Z
        #EXTINF:1.50000,
        seg-42.m4s
        #EXT-X-ENDLIST

        """)
    }

    /// Media lost in an origin's restart: EXT-X-GAP before the segment's EXTINF (section 4.4.4.7).
    @Test func gapSegmentGolden() {
        let text = MediaPlaylist(
            targetDuration: 1, mapURI: "init.mp4",
            segments: [
                PlaylistSegment(sequence: 7, duration: 0.6, uri: "seg-7.m4s", gap: true, programDateTime: "2026-11-22T05:00:00.000Z"),
                PlaylistSegment(sequence: 8, duration: 1, uri: "seg-8.m4s", discontinuity: true, programDateTime: "2026-11-22T05:00:00.600Z"),
            ]).render()
        #expect(text == """
        #EXTM3U
        #EXT-X-VERSION:7
        #EXT-X-TARGETDURATION:1
        #EXT-X-MEDIA-SEQUENCE:7
        #EXT-X-MAP:URI="init.mp4"
        #EXT-X-PROGRAM-DATE-TIME:2026-11-22T05:00:00.000Z
        #EXT-X-GAP
        #EXTINF:0.60000,
        seg-7.m4s
        #EXT-X-DISCONTINUITY
        #EXT-X-PROGRAM-DATE-TIME:2026-11-22T05:00:00.600Z
        #EXTINF:1.00000,
        seg-8.m4s

        """)
    }

    @Test func emptyLivePlaylistStartsAtZero() {
        let text = MediaPlaylist(targetDuration: 2, mapURI: "init.mp4", segments: []).render()
        #expect(text.contains("#EXT-X-MEDIA-SEQUENCE:0"))
        #expect(!text.contains("ENDLIST"))
    }
}

@Suite struct ProgramDateTimeTests {
    static let golden: [(seconds: Double, text: String)] = [
        (0, "1970-01-01T00:00:00.000Z"),
        (951_782_400.25, "2000-02-29T00:00:00.250Z"),
        (1_795_340_281.999, "2026-11-22T09:38:01.999Z"),
        (4_107_542_399.5, "2100-02-28T23:59:59.500Z"),
        (-1.5, "1969-12-31T23:59:58.500Z"),
    ]

    @Test(arguments: golden.indices)
    func formatsISO8601InUTCWithMilliseconds(_ i: Int) {
        #expect(ProgramDateTime.format(Self.golden[i].seconds) == Self.golden[i].text)
    }
}
