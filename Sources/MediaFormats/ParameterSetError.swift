/// Why an H.264 or HEVC decoder configuration record or parameter set was refused.
public enum ParameterSetError: Error, Equatable, Sendable {
    case truncated
    case unsupportedConfigurationVersion(UInt8)
    case invalidNALLengthSize
    case tooManyParameterSets
    case missingParameterSet(String)
    case invalidSPS(String)
}
