import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Headless Chromium driven through chromedriver's W3C WebDriver HTTP API (no Selenium needed).
final class WebDriverSession: @unchecked Sendable {
    private let driver: ServiceProcess
    private let base: String
    private var sessionID = ""

    /// `acceptInsecureCerts` lets pages fetch from an origin with a self-signed certificate.
    init(logDirectory: URL, acceptInsecureCerts: Bool = false) async throws {
        let port = try TestEnvironment.freePort()
        driver = try ServiceProcess(name: "chromedriver", executable: try TestEnvironment.which("chromedriver"), arguments: ["--port=\(port)"], logDirectory: logDirectory)
        base = "http://127.0.0.1:\(port)"
        let statusURL = base + "/status"
        let up = await StorecastStack.eventually(timeout: .seconds(10)) {
            ((try? await Self.curl(["-s", statusURL], body: nil)) ?? "").contains("\"ready\":true")
        }
        guard up else { throw TestEnvironment.Failure(description: "chromedriver did not start: \(driver.log)") }
        let chromium = (try? TestEnvironment.which("chromium"))?.path ?? "/usr/bin/chromium"
        let response = try await call("POST", "/session", [
            "capabilities": ["alwaysMatch": [
                "browserName": "chrome",
                "acceptInsecureCerts": acceptInsecureCerts,
                "goog:chromeOptions": [
                    "binary": chromium,
                    "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--autoplay-policy=no-user-gesture-required", "--mute-audio"] + (acceptInsecureCerts ? ["--ignore-certificate-errors"] : []),
                ],
            ]],
        ])
        guard let value = response["value"] as? [String: Any], let id = value["sessionId"] as? String else {
            throw TestEnvironment.Failure(description: "no WebDriver session: \(response)")
        }
        sessionID = id
    }

    func navigate(_ url: String) async throws {
        _ = try await call("POST", "/session/\(sessionID)/url", ["url": url])
    }

    /// Runs a script that returns a JSON-compatible value.
    func evaluate(_ script: String) async throws -> Any? {
        try await call("POST", "/session/\(sessionID)/execute/sync", ["script": script, "args": []])["value"]
    }

    func close() async {
        _ = try? await call("DELETE", "/session/\(sessionID)", nil)
        driver.stop(grace: 2)
    }

    /// Through the curl CLI: chromedriver writes `Content-Length:249` without a space, which
    /// swift-corelibs-foundation's URLSession rejects ("Failed writing header").
    private func call(_ method: String, _ path: String, _ body: [String: Any]?) async throws -> [String: Any] {
        var args = ["-s", "-X", method, base + path]
        var payload: Data?
        if let body {
            payload = try JSONSerialization.data(withJSONObject: body)
            args += ["-H", "Content-Type: application/json", "--data-binary", "@-"]
        }
        let output = try await Self.curl(args, body: payload)
        return (try JSONSerialization.jsonObject(with: Data(output.utf8))) as? [String: Any] ?? [:]
    }

    private static func curl(_ arguments: [String], body: Data?) async throws -> String {
        let process = Process()
        process.executableURL = try TestEnvironment.which("curl")
        process.arguments = arguments
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        if let body { input.fileHandleForWriting.write(body) }
        try input.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }
}
