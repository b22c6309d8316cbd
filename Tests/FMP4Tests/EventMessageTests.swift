import FMP4
import StorecastTestSupport
import Testing

/// Product cards in band (issue 18): the `emsg` box, the ID3 tag it carries, and a chunk that
/// carries them. Golden bytes written out by hand from ISO/IEC 23009-1 5.10.3.3 and ID3v2.4.
@Suite struct EventMessageTests {
    @Test func emsgVersionOneHasItsTimesBeforeItsStrings() {
        let message = EventMessage(schemeIdURI: EventMessage.id3Scheme, timescale: 90_000, presentationTime: 0x01_0203_0405,
                                   eventDuration: 180_000, id: 7, messageData: [0xAA, 0xBB])
        let golden: [UInt8] = [0, 0, 0, 64] + Array("emsg".utf8) + [1, 0, 0, 0]
            + [0x00, 0x01, 0x5F, 0x90]                           // timescale 90,000
            + [0x00, 0x00, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05]   // presentation_time
            + [0x00, 0x02, 0xBF, 0x20]                           // event_duration 180,000
            + [0x00, 0x00, 0x00, 0x07]                           // id
            + Array("https://aomedia.org/emsg/ID3".utf8) + [0]   // scheme_id_uri
            + [0]                                                // value: empty
            + [0xAA, 0xBB]                                       // message_data
        #expect(message.box == golden)
    }

    @Test func aNullInAStringCannotEndItEarly() {
        let message = EventMessage(schemeIdURI: "a\u{0}b", value: "\u{0}", timescale: 1, presentationTime: 0, id: 0, messageData: [])
        #expect(Array(message.box.suffix(4)) == Array("ab".utf8) + [0, 0])
        #expect(message.box.count == 12 + 4 + 8 + 4 + 4 + 4)
    }

    static let id3Header: [UInt8] = Array("ID3".utf8) + [4, 0, 0]
    static let txxx: [UInt8] = Array("TXXX".utf8)
    /// Golden table: frames in, tag out (header, synchsafe body size, frame id, synchsafe frame
    /// size, frame flags, encoding 3, description, null, value).
    static let tags: [([ID3Tag.Text], [UInt8])] = [
        ([ID3Tag.Text(description: "d", value: "v")],
         id3Header + [0, 0, 0, 14] + txxx + [0, 0, 0, 4, 0, 0, 3, 0x64, 0, 0x76]),
        ([ID3Tag.Text(description: "", value: "")],
         id3Header + [0, 0, 0, 12] + txxx + [0, 0, 0, 2, 0, 0, 3, 0]),
        ([ID3Tag.Text(description: "a\u{0}", value: "é")],
         id3Header + [0, 0, 0, 15] + txxx + [0, 0, 0, 5, 0, 0, 3, 0x61, 0, 0xC3, 0xA9]),
    ]

    @Test(arguments: tags)
    func id3TagsHoldTXXXFrames(frames: [ID3Tag.Text], golden: [UInt8]) {
        #expect(ID3Tag.make(frames) == golden)
    }

    @Test func sizesAreSynchsafe() throws {
        // 200 bytes of value: frame content 202 = 1 * 128 + 74 (encoding, empty description, null);
        // the tag's body 212 = 1 * 128 + 84 (the frame's 10-byte header and its content).
        let tag = try #require(ID3Tag.make([ID3Tag.Text(description: "", value: String(repeating: "x", count: 200))]))
        #expect(Array(tag[6..<10]) == [0, 0, 1, 84])
        #expect(Array(tag[14..<18]) == [0, 0, 1, 74])
        #expect(tag.count == 10 + 212)
        #expect(tag[6..<10].allSatisfy { $0 < 0x80 } && tag[14..<18].allSatisfy { $0 < 0x80 })
    }

    @Test func aChunkCarriesItsEventsBeforeItsMoof() throws {
        let samples = [FragmentSample(duration: 3000, isSync: true, data: [1, 2, 3])]
        let event = EventMessage(schemeIdURI: EventMessage.id3Scheme, timescale: 90_000, presentationTime: 42, id: 1, messageData: [9])
        let plain = MediaFragment.make(sequenceNumber: 3, baseMediaDecodeTime: 42, samples: samples)
        let carrying = MediaFragment.make(sequenceNumber: 3, baseMediaDecodeTime: 42, samples: samples, events: [event, event])
        let tree = BoxTree.parse(carrying)
        #expect(tree.map(\.type) == ["emsg", "emsg", "moof", "mdat"])
        // The moof is unchanged: its data offset counts from itself, not from the chunk's start.
        #expect(Array(carrying.suffix(plain.count)) == plain)
        let moof = try #require(tree.first { $0.type == "moof" })
        let trun = try #require(BoxTree.find(tree, ["moof", "traf", "trun"]))
        let dataOffset = moof.offset + Int(BoxTree.u32(trun.payload, 8))
        #expect(Array(carrying[dataOffset..<dataOffset + 3]) == [1, 2, 3])
    }

    /// Golden table: an event moved to the start of the fragment that carries it.
    static let moves: [(presentation: UInt64, duration: UInt32, fragmentStart: UInt64, expected: (UInt64, UInt32)?)] = [
        (100, 50, 100, (100, 50)),                                        // on time: unchanged
        (100, 50, 90, (100, 50)),                                         // later than the start: unchanged
        (100, 50, 120, (120, 30)),                                        // 20 late: moved, 20 shorter, same end
        (100, 50, 149, (149, 1)),
        (100, 50, 150, nil),                                              // over by the fragment's start
        (100, EventMessage.unknownDuration, 1_000, (1_000, EventMessage.unknownDuration)),  // open: only moves
    ]

    @Test(arguments: moves.indices)
    func anEventStartsWithinTheFragmentThatCarriesIt(_ i: Int) {
        let m = Self.moves[i]
        let event = EventMessage(schemeIdURI: EventMessage.id3Scheme, timescale: 90_000, presentationTime: m.presentation, eventDuration: m.duration, id: 1, messageData: [])
        let moved = event.starting(atOrAfter: m.fragmentStart)
        #expect(moved.map { [$0.presentationTime, UInt64($0.eventDuration)] } == m.expected.map { [$0.0, UInt64($0.1)] }, "case \(i)")
        #expect(moved.map { $0.messageData == event.messageData && $0.id == event.id } ?? true)
    }
}
