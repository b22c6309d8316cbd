import FMP4
import Foundation
import HLS

/// Product cards carried in band (issue 18): besides its EXT-X-DATERANGE, each card goes into
/// every video rendition's media once, as an ID3 tag in an `emsg` (``EventMessage``), so a file
/// cut from the show (a recording's segments, a download) keeps its cards without a playlist.
/// The event starts with the card, or, where that moment is already written, with the first
/// chunk written after the packager read the card (the AOM scheme wants the event's time
/// within the chunk that carries it). Pure.
///
/// The tag holds one `TXXX` frame: the description is the date range's CLASS, the value a JSON
/// object with the date range's own attribute names (`ID`, `CLASS`, `START-DATE`, `DURATION`
/// and the `X-` attributes), so a client reads the same fields from either.
enum InBandCards {
    /// The ID3 tag of a card, or nil when it cannot be written.
    static func tag(_ range: DateRange) -> [UInt8]? {
        var fields: [String: Any] = ["ID": range.id, "CLASS": range.classValue, "START-DATE": ProgramDateTime.format(range.startDate)]
        if let duration = range.duration { fields["DURATION"] = duration }
        for a in range.attributes where DateRange.isClientAttributeName(a.name) { fields[a.name] = a.value }
        guard let json = try? JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys, .withoutEscapingSlashes]) else { return nil }
        return ID3Tag.make([ID3Tag.Text(description: range.classValue, value: String(decoding: json, as: UTF8.self))])
    }

    /// The `emsg` id of a card: the number in its date range's ID (`highlight-N`), else a hash
    /// that stays the same across packagers (FNV-1a).
    static func eventID(_ range: DateRange) -> UInt32 {
        if let n = range.id.split(separator: "-").last.flatMap({ Int64($0) }) { return UInt32(truncatingIfNeeded: n) }
        return range.id.utf8.reduce(2_166_136_261 as UInt32) { ($0 ^ UInt32($1)) &* 16_777_619 }
    }
}
