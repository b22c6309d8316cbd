import BinaryCoding

/// The fields of an H.264 SPS (ITU-T H.264 section 7.3.2.1.1) that packaging and ladders need.
public struct H264SequenceParameterSet: Equatable, Sendable {
    public var profileIDC: UInt8
    public var constraintFlags: UInt8
    public var levelIDC: UInt8
    public var chromaFormatIDC: UInt32 = 1
    public var bitDepthLuma: UInt32 = 8
    public var bitDepthChroma: UInt32 = 8
    public var width: Int
    public var height: Int

    public init(parsing nal: [UInt8]) throws {
        guard nal.count >= 4, nal[0] & 0x1F == 7 else { throw ParameterSetError.invalidSPS("not an SPS NAL unit") }
        let rbsp = NALUnit.removeEmulationPrevention(Array(nal.dropFirst()))
        var r = BitReader(rbsp)
        do {
            profileIDC = UInt8(try r.bits(8))
            constraintFlags = UInt8(try r.bits(8))
            levelIDC = UInt8(try r.bits(8))
            _ = try r.unsignedExpGolomb()  // seq_parameter_set_id
            if [100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135].contains(profileIDC) {
                chromaFormatIDC = try r.unsignedExpGolomb()
                guard chromaFormatIDC <= 3 else { throw ParameterSetError.invalidSPS("chroma_format_idc \(chromaFormatIDC)") }
                if chromaFormatIDC == 3 { try r.skip(1) }
                let lumaMinus8 = try r.unsignedExpGolomb(), chromaMinus8 = try r.unsignedExpGolomb()
                // H.264 7.4.2.1.1: bit_depth_*_minus8 is 0…6.
                guard lumaMinus8 <= 6, chromaMinus8 <= 6 else { throw ParameterSetError.invalidSPS("bit depth") }
                bitDepthLuma = lumaMinus8 + 8
                bitDepthChroma = chromaMinus8 + 8
                try r.skip(1)  // qpprime_y_zero_transform_bypass_flag
                if try r.bit() == 1 {  // seq_scaling_matrix_present_flag
                    for i in 0..<(chromaFormatIDC != 3 ? 8 : 12) where try r.bit() == 1 {
                        try Self.skipScalingList(&r, size: i < 6 ? 16 : 64)
                    }
                }
            }
            _ = try r.unsignedExpGolomb()  // log2_max_frame_num_minus4
            let pocType = try r.unsignedExpGolomb()
            if pocType == 0 {
                _ = try r.unsignedExpGolomb()
            } else if pocType == 1 {
                try r.skip(1)
                _ = try r.signedExpGolomb()
                _ = try r.signedExpGolomb()
                let cycles = try r.unsignedExpGolomb()
                guard cycles < 256 else { throw ParameterSetError.invalidSPS("num_ref_frames_in_pic_order_cnt_cycle \(cycles)") }
                for _ in 0..<cycles { _ = try r.signedExpGolomb() }
            }
            _ = try r.unsignedExpGolomb()  // max_num_ref_frames
            try r.skip(1)
            let widthMbs = Int(try r.unsignedExpGolomb()) + 1
            let heightMapUnits = Int(try r.unsignedExpGolomb()) + 1
            let frameMbsOnly = try r.bit()
            if frameMbsOnly == 0 { try r.skip(1) }
            try r.skip(1)  // direct_8x8_inference_flag
            var crop = (left: 0, right: 0, top: 0, bottom: 0)
            if try r.bit() == 1 {
                crop = (Int(try r.unsignedExpGolomb()), Int(try r.unsignedExpGolomb()), Int(try r.unsignedExpGolomb()), Int(try r.unsignedExpGolomb()))
            }
            let cropUnitX = chromaFormatIDC == 0 || chromaFormatIDC == 3 ? 1 : 2
            let cropUnitY = (chromaFormatIDC == 1 ? 2 : 1) * (2 - Int(frameMbsOnly))
            width = widthMbs * 16 - (crop.left + crop.right) * cropUnitX
            height = heightMapUnits * 16 * (2 - Int(frameMbsOnly)) - (crop.top + crop.bottom) * cropUnitY
            guard width > 0, height > 0, width <= 16384, height <= 16384 else { throw ParameterSetError.invalidSPS("size \(width)x\(height)") }
        } catch is ByteReaderError {
            throw ParameterSetError.invalidSPS("truncated")
        }
    }

    private static func skipScalingList(_ r: inout BitReader, size: Int) throws {
        var last = 8, next = 8
        for _ in 0..<size where next != 0 {
            // delta_scale is -128…127 in a valid stream; reduce in Int so garbage cannot overflow.
            next = ((last + Int(try r.signedExpGolomb())) % 256 + 256) % 256
            last = next == 0 ? last : next
        }
    }
}
