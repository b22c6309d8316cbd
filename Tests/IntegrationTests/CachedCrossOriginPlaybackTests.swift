import Foundation
import Testing

/// The packager behind a cache, as operators run it behind a CDN: Debian's nginx with
/// `proxy_cache` in front, and a shop's page on another origin. The browser first plays the
/// stream natively (its requests carry no `Origin`, so whatever it fetched is cached without
/// one), then the shop's page plays the same stream with hls.js. Before, those cached answers
/// had no `Access-Control-Allow-Origin` and hls.js failed with a fatal load error.
@Suite(.serialized) struct CachedCrossOriginPlaybackTests {
    static func nginxConfig(directory: URL, cdnPort: Int, shopPort: Int, packagerPort: Int) -> String {
        let d = directory.path
        return """
            worker_processes 1;
            daemon off;
            pid \(d)/nginx.pid;
            error_log \(d)/nginx-error.log;
            events { worker_connections 1024; }
            http {
                log_format cache '$http_origin $upstream_cache_status $uri';
                access_log \(d)/nginx-access.log cache;
                client_body_temp_path \(d)/nginx-body;
                proxy_temp_path \(d)/nginx-proxy;
                fastcgi_temp_path \(d)/nginx-fastcgi;
                uwsgi_temp_path \(d)/nginx-uwsgi;
                scgi_temp_path \(d)/nginx-scgi;
                proxy_cache_path \(d)/nginx-cache keys_zone=media:10m;
                types { text/html html; }
                server {
                    listen 127.0.0.1:\(cdnPort);
                    location / {
                        proxy_pass http://127.0.0.1:\(packagerPort);
                        proxy_http_version 1.1;
                        proxy_cache media;
                        proxy_read_timeout 30s;
                        add_header X-Cache-Status $upstream_cache_status always;
                    }
                }
                server {
                    listen 127.0.0.1:\(shopPort);
                    root \(d)/shop;
                }
            }
            """
    }

    /// nginx with `proxy_cache` in front of the stack's packager, and a shop's origin; up once
    /// `/healthz` answers through it.
    static func startCache(for stack: StorecastStack) async throws -> (nginx: ServiceProcess, cdn: String, shopPort: Int) {
        let (cdnPort, shopPort) = (try TestEnvironment.freePort(), try TestEnvironment.freePort())
        let cdn = "http://127.0.0.1:\(cdnPort)"
        let dir = stack.logDirectory
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("shop"), withIntermediateDirectories: true)
        let config = dir.appendingPathComponent("nginx.conf")
        try Data(nginxConfig(directory: dir, cdnPort: cdnPort, shopPort: shopPort, packagerPort: stack.httpPort).utf8).write(to: config)
        let nginxBinary = (try? TestEnvironment.which("nginx")) ?? URL(fileURLWithPath: "/usr/sbin/nginx")
        let nginx = try ServiceProcess(name: "nginx", executable: nginxBinary, arguments: ["-c", config.path], logDirectory: dir)
        let up = await StorecastStack.eventually(timeout: .seconds(10)) { await TestEnvironment.httpGet("\(cdn)/healthz")?.status == 200 }
        #expect(up, "nginx in front of the packager: \(nginx.log)")
        return (nginx, cdn, shopPort)
    }

    static func shopPage(cdn: String, stream: String) -> String {
        """
        <!doctype html><html><body><video id="v" muted autoplay playsinline></video>
        <script>window.pageErrors = []; window.addEventListener('error', e => window.pageErrors.push(String(e.message)));</script>
        <script src="\(cdn)/assets/hls.js"></script>
        <script>
        (() => {  // in a scope of its own: hls.js's bundle declares globals of its own
            window.fatal = []; window.errorCount = 0;
            const hls = new Hls({ lowLatencyMode: true });
            hls.on(Hls.Events.ERROR, (e, d) => { window.errorCount++; if (d.fatal) window.fatal.push(d.details + ' ' + (d.url || '')); });
            hls.loadSource('\(cdn)/live/\(stream)/master.m3u8');
            hls.attachMedia(document.getElementById('v'));
        })();
        </script></body></html>
        """
    }

    @Test func hlsJSOnAnotherOriginPlaysWhatTheNativePlayerAndTheCacheFetchedFirst() async throws {
        let stack = try StorecastStack()
        let key = try await stack.provisionStream(tenant: "shop", stream: "cdn")
        try stack.start(packagerArguments: ["--hlsjs-file", try TestEnvironment.testTool("hls.js").path])
        try await stack.waitUntilReady()
        let (nginx, cdn, shopPort) = try await Self.startCache(for: stack)
        defer { nginx.stop(grace: 2) }
        let dir = stack.logDirectory
        try Data(Self.shopPage(cdn: cdn, stream: "shop/cdn").utf8).write(to: dir.appendingPathComponent("shop/index.html"))

        let publisher = try EndToEndTests.publisher(url: stack.rtmpURL(key: key), seconds: 60, logDirectory: dir)
        defer { publisher.stop(grace: 1) }
        let browser = try await WebDriverSession(logDirectory: dir)
        // 1. The native player, through the cache, fetching with no Origin.
        try await browser.navigate("\(cdn)/play/shop/cdn?player=native")
        let native = await StorecastStack.eventually(timeout: .seconds(25)) {
            ((try? await browser.evaluate("return document.getElementById('player').currentTime") as? NSNumber)?.doubleValue ?? 0) > 2
        }
        #expect(native, "native playback through the cache started:\n\(stack.logs())")
        // A link preview or the CDN's own fetch, with no Origin either: every rendition's init
        // segment, so whatever level hls.js picks meets a cached answer.
        let master = await TestEnvironment.httpText("\(cdn)/live/shop/cdn/master.m3u8")
        let renditions = master.split(separator: "\n").filter { !$0.hasPrefix("#") && $0.hasSuffix(".m3u8") }.map(String.init)
            + master.matches(of: /URI="([^"]+)"/).map { String($0.1) }
        #expect(renditions.count >= 3, "\(master)")
        for uri in renditions {
            let initURL = "\(cdn)/live/shop/cdn/" + uri.replacingOccurrences(of: "index.m3u8", with: "init.mp4")
            #expect(await TestEnvironment.httpGet(initURL)?.status == 200, "\(initURL)")
        }
        // 2. The shop's page on another origin, with hls.js, in the same browser.
        try await browser.navigate("http://127.0.0.1:\(shopPort)/index.html")
        let probe = "const v = document.getElementById('v'); return [v ? v.currentTime : -1, window.fatal || ['no page script'], window.errorCount || 0];"
        var samples: [[Any]] = []
        let started = await StorecastStack.eventually(timeout: .seconds(20)) {
            guard let s = try? await browser.evaluate(probe) as? [Any] else { return false }
            samples.append(s)
            return ((s.first as? NSNumber)?.doubleValue ?? 0) > 0 || !((s[1] as? [String])?.isEmpty ?? true)
        }
        let nginxLogs = { ["nginx-error.log", "nginx-access.log"].map { (try? String(contentsOf: dir.appendingPathComponent($0), encoding: .utf8))?.suffix(3000) ?? "" }.joined(separator: "\n") }
        let source = (try? await browser.evaluate("return document.documentElement.outerHTML.slice(0, 300) +  ' Hls=' + typeof Hls + ' errors=' + JSON.stringify(window.pageErrors) + ' fatal=' + JSON.stringify(window.fatal)")) as? String ?? "?"
        #expect(started, "hls.js on the shop's page never started: \(samples.suffix(2)) page: \(source)\n\(nginxLogs())")
        let first = samples.last.flatMap { ($0.first as? NSNumber)?.doubleValue } ?? 0
        try await Task.sleep(for: .seconds(8))
        let last = try await browser.evaluate(probe) as? [Any] ?? []
        await browser.close()
        let fatal = (last.count > 1 ? last[1] as? [Any] : nil) ?? ["no answer"]
        #expect(fatal.isEmpty, "no fatal hls.js error on the other origin: \(fatal) page: \(source)\n\(nginxLogs())")
        #expect(((last.first as? NSNumber)?.doubleValue ?? 0) - first > 5, "hls.js played on: \(first) → \(last)")
        // The cache was really in play: init segments fetched without Origin were cached, and
        // the cached copy answers a cross-origin request with the CORS header.
        let log = (try? String(contentsOf: dir.appendingPathComponent("nginx-access.log"), encoding: .utf8)) ?? ""
        #expect(log.split(separator: "\n").contains { $0.contains(" HIT ") && $0.hasSuffix("init.mp4") }, "nginx served cached init segments:\n\(log.suffix(1500))")
        for uri in renditions {
            let initURL = "\(cdn)/live/shop/cdn/" + uri.replacingOccurrences(of: "index.m3u8", with: "init.mp4")
            let cached = await TestEnvironment.httpExchange(initURL, headers: ["Origin": "http://127.0.0.1:\(shopPort)"])
            #expect(cached?.headers["x-cache-status"] == "HIT" && cached?.headers["access-control-allow-origin"] == "*",
                    "the cached answer, fetched without Origin, serves another origin: \(cached?.headers ?? [:])")
        }
        // Errors carry the header too: a 404 cached or not must not read as a network failure.
        let missing = await TestEnvironment.httpExchange("\(cdn)/live/shop/nothing/master.m3u8")
        #expect(missing?.status == 404 && missing?.headers["access-control-allow-origin"] == "*", "\(missing?.headers ?? [:])")
        _ = await stack.stop()
    }
}
