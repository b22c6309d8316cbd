import Foundation

/// A real child process (a Storecast service, ffmpeg, ffprobe) with its output in a file.
final class ServiceProcess: @unchecked Sendable {
    let name: String
    let process = Process()
    let logURL: URL

    /// `environment` is added to this process's own.
    init(name: String, executable: URL, arguments: [String], environment: [String: String] = [:], logDirectory: URL) throws {
        self.name = name
        logURL = logDirectory.appendingPathComponent("\(name).log")
        FileManager.default.createFile(atPath: logURL.path, contents: nil)
        let handle = try FileHandle(forWritingTo: logURL)
        process.executableURL = executable
        process.arguments = arguments
        if !environment.isEmpty { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        try process.run()
    }

    var log: String { (try? String(contentsOf: logURL, encoding: .utf8)) ?? "" }
    var isRunning: Bool { process.isRunning }

    /// SIGTERM, then SIGKILL after `grace`.
    func stop(grace: TimeInterval = 5) {
        guard process.isRunning else { return }
        process.terminate()
        let deadline = Date().addingTimeInterval(grace)
        while process.isRunning && Date() < deadline { usleep(50_000) }
        if process.isRunning { Glibc.kill(process.processIdentifier, SIGKILL) }
    }

    /// SIGKILL at once: the process gets no chance to close anything (a phone losing its network).
    func kill() {
        guard process.isRunning else { return }
        Glibc.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// Waits for exit (or kills after `timeout`) and returns the status.
    func wait(timeout: TimeInterval) async -> Int32 {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { try? await Task.sleep(for: .milliseconds(50)) }
        if process.isRunning { Glibc.kill(process.processIdentifier, SIGKILL); try? await Task.sleep(for: .milliseconds(100)) }
        return process.isRunning ? -1 : process.terminationStatus
    }

    /// Runs a tool to completion and returns its combined output.
    static func run(_ executable: URL, _ arguments: [String], timeout: TimeInterval = 60) async throws -> (status: Int32, output: String) {
        let dir = URL(fileURLWithPath: NSTemporaryDirectory())
        let p = try ServiceProcess(name: "\(executable.lastPathComponent)-\(UUID().uuidString.prefix(6))", executable: executable, arguments: arguments, logDirectory: dir)
        let status = await p.wait(timeout: timeout)
        let output = p.log
        try? FileManager.default.removeItem(at: p.logURL)
        return (status, output)
    }
}
