/// A compressed frame copied out of an `AVPacket`: plain Swift bytes, safe to send anywhere.
public struct EncodedPacket: Sendable, Equatable {
    public var data: [UInt8]
    public var pts: Int64
    public var dts: Int64
    public var isKeyframe: Bool

    public init(data: [UInt8], pts: Int64, dts: Int64, isKeyframe: Bool) {
        self.data = data
        self.pts = pts
        self.dts = dts
        self.isKeyframe = isKeyframe
    }
}
