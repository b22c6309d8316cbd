/// An `emsg` box, version 1 (ISO/IEC 23009-1 section 5.10.3.3): an event carried in band, before
/// the `moof` of the fragment that carries it, at a time on the track's own timeline. Pure.
///
/// Storecast carries product cards as ID3 tags in it (``ID3Tag``), under the AOM's
/// ID3-in-emsg scheme, so a file cut from a show (a recording, a download) keeps its cards
/// without a playlist; hls.js turns them into `id3` metadata cues.
public struct EventMessage: Equatable, Sendable {
    /// The AOM scheme for ID3 in `emsg` ("Carriage of ID3 Timed Metadata in the Common Media
    /// Application Format", version 1.0).
    public static let id3Scheme = "https://aomedia.org/emsg/ID3"

    public var schemeIdURI: String
    public var value: String
    public var timescale: UInt32
    /// When the event starts, in `timescale` units on the track's timeline (as `tfdt`).
    public var presentationTime: UInt64
    /// `0xFFFF_FFFF`: unknown (an open card).
    public var eventDuration: UInt32
    public var id: UInt32
    public var messageData: [UInt8]

    public static let unknownDuration: UInt32 = 0xFFFF_FFFF

    public init(schemeIdURI: String, value: String = "", timescale: UInt32, presentationTime: UInt64, eventDuration: UInt32 = unknownDuration, id: UInt32, messageData: [UInt8]) {
        self.schemeIdURI = schemeIdURI
        self.value = value
        self.timescale = timescale
        self.presentationTime = presentationTime
        self.eventDuration = eventDuration
        self.id = id
        self.messageData = messageData
    }

    /// The event as carried by a fragment that starts at `time` (the AOM ID3 scheme: the
    /// presentation time must fall within the fragment that carries it): one that started
    /// earlier starts at `time` instead, shortened by as much so it ends when it would have; nil
    /// when it has ended by then. An event with an unknown duration only moves.
    public func starting(atOrAfter time: UInt64) -> EventMessage? {
        guard presentationTime < time else { return self }
        var moved = self
        moved.presentationTime = time
        guard eventDuration != Self.unknownDuration else { return moved }
        let late = time - presentationTime
        guard late < UInt64(eventDuration) else { return nil }
        moved.eventDuration = eventDuration - UInt32(late)
        return moved
    }

    /// The box: version 1 puts the times first and the strings (null-terminated UTF-8) after them.
    public var box: [UInt8] {
        var b = BoxWriter()
        b.fullBox("emsg", version: 1, flags: 0) { b in
            b.u32(timescale)
            b.u64(presentationTime)
            b.u32(eventDuration)
            b.u32(id)
            b.append(Array(schemeIdURI.utf8.filter { $0 != 0 }) + [0])
            b.append(Array(value.utf8.filter { $0 != 0 }) + [0])
            b.append(messageData)
        }
        return b.bytes
    }
}
