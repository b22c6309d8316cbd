import Foundation

/// Files committed beside the tests (captures, golden outputs).
public enum Fixtures {
    public static func bytes(_ path: String, relativeTo file: String = #filePath) throws -> [UInt8] {
        let url = URL(fileURLWithPath: file).deletingLastPathComponent().appendingPathComponent(path)
        return Array(try Data(contentsOf: url))
    }

    /// The repository root (two levels above Tests/<Target>/File.swift).
    public static func repositoryRoot(file: String = #filePath) -> URL {
        URL(fileURLWithPath: file).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }
}
