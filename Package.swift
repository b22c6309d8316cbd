// swift-tools-version:6.0
import PackageDescription

// Storecast: live-commerce streaming backend.
//
// Layering (see docs/architecture.md):
//   C system libraries  -> CZeroMQ, CFFmpeg, CPostgres (module maps and shims only)
//   C wrappers           -> ZeroMQ, FFmpegCodecs, PostgresClient (each C handle has one owner)
//   pure cores           -> RTMP, MediaFormats, FMP4, HLS, StorecastWire (no I/O, no C)
//   service shells       -> Ingest, Transcoder, Packager, MetricsCollector, ControlPlane, StorecastRuntime
//   executables          -> composition roots only

let swift6: [SwiftSetting] = [.swiftLanguageMode(.v6)]

let package = Package(
    name: "Storecast",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "storecast", targets: ["storecast"]),
        .executable(name: "storecast-ingest", targets: ["storecast-ingest"]),
        .executable(name: "storecast-transcoder", targets: ["storecast-transcoder"]),
        .executable(name: "storecast-packager", targets: ["storecast-packager"]),
        .executable(name: "storecast-metrics", targets: ["storecast-metrics"]),
        .executable(name: "storecast-api", targets: ["storecast-api"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket.git", from: "2.8.1"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-openapi-runtime.git", from: "1.13.4"),
        .package(url: "https://github.com/hummingbird-project/swift-openapi-hummingbird.git", from: "2.1.0"),
        .package(url: "https://github.com/adam-fowler/compress-nio.git", from: "1.5.0"),
    ],
    targets: [
        // MARK: C system libraries
        .systemLibrary(name: "CZeroMQ", pkgConfig: "libzmq", providers: [.apt(["libzmq3-dev"])]),
        .systemLibrary(
            name: "CFFmpeg", pkgConfig: "libavcodec",
            providers: [.apt(["libavcodec-dev", "libavutil-dev", "libswscale-dev"])]),
        .systemLibrary(name: "CPostgres", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),

        // MARK: C wrappers
        .target(name: "ZeroMQ", dependencies: ["CZeroMQ"], swiftSettings: swift6),
        .target(name: "FFmpegCodecs", dependencies: ["CFFmpeg"], swiftSettings: swift6),
        .target(name: "PostgresClient", dependencies: ["CPostgres"], swiftSettings: swift6),

        // MARK: Pure cores
        .target(name: "BinaryCoding", swiftSettings: swift6),
        .target(name: "RTMP", dependencies: ["BinaryCoding"], swiftSettings: swift6),
        .target(name: "MediaFormats", dependencies: ["BinaryCoding"], swiftSettings: swift6),
        .target(name: "FMP4", dependencies: ["BinaryCoding"], swiftSettings: swift6),
        .target(name: "HLS", swiftSettings: swift6),
        .target(name: "StorecastWire", dependencies: ["BinaryCoding"], swiftSettings: swift6),

        // MARK: Service shells
        .target(
            name: "ConnectionBudget",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP2", package: "swift-nio-extras"),
                .product(name: "Logging", package: "swift-log"), .product(name: "Metrics", package: "swift-metrics"),
            ],
            swiftSettings: swift6),
        .target(
            name: "StorecastRuntime",
            dependencies: [
                "ZeroMQ", "PostgresClient", "StorecastWire",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swift6),
        .target(
            name: "Ingest",
            dependencies: [
                "RTMP", "MediaFormats", "StorecastWire", "StorecastRuntime", "ZeroMQ", "PostgresClient", "ConnectionBudget",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"), .product(name: "Metrics", package: "swift-metrics"), .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: swift6),
        .target(
            name: "Transcoder",
            dependencies: ["FFmpegCodecs", "MediaFormats", "StorecastWire", "ZeroMQ", .product(name: "Logging", package: "swift-log"), .product(name: "Metrics", package: "swift-metrics"), .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")],
            swiftSettings: swift6),
        .target(
            name: "Packager",
            dependencies: [
                "FMP4", "HLS", "MediaFormats", "StorecastWire", "StorecastRuntime", "ZeroMQ", "PostgresClient", "ConnectionBudget",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"), .product(name: "Logging", package: "swift-log"), .product(name: "Metrics", package: "swift-metrics"), .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"), .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "CompressNIO", package: "compress-nio"),
            ],
            swiftSettings: swift6),
        .target(
            name: "MetricsCollector",
            dependencies: [
                "StorecastWire", "StorecastRuntime", "ZeroMQ", "ConnectionBudget",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"), .product(name: "Logging", package: "swift-log"), .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"), .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swift6),
        .target(
            name: "ControlPlane",
            dependencies: [
                "StorecastRuntime", "PostgresClient", "StorecastWire", "ConnectionBudget",
                .product(name: "Hummingbird", package: "hummingbird"), .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "HTTPTypes", package: "swift-http-types"), .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"), .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "OpenAPIHummingbird", package: "swift-openapi-hummingbird"),
            ],
            swiftSettings: swift6),

        // MARK: Executables (composition roots)
        .executableTarget(
            name: "storecast-ingest",
            dependencies: [.product(name: "Logging", package: "swift-log"), "Ingest", "StorecastRuntime", "ZeroMQ", "PostgresClient", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            swiftSettings: swift6),
        .executableTarget(
            name: "storecast-transcoder",
            dependencies: [.product(name: "Logging", package: "swift-log"), "Transcoder", "StorecastRuntime", "ZeroMQ", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            swiftSettings: swift6),
        .executableTarget(
            name: "storecast-packager",
            dependencies: [.product(name: "Logging", package: "swift-log"), "Packager", "StorecastRuntime", "ZeroMQ", "PostgresClient", "ConnectionBudget", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            swiftSettings: swift6),
        .executableTarget(
            name: "storecast-metrics",
            dependencies: [.product(name: "Logging", package: "swift-log"), "MetricsCollector", "StorecastRuntime", "ZeroMQ", "ConnectionBudget", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            swiftSettings: swift6),
        .executableTarget(
            name: "storecast-api",
            dependencies: [
                "ControlPlane", "StorecastRuntime", "PostgresClient", "ZeroMQ", "ConnectionBudget", .product(name: "Logging", package: "swift-log"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swift6),
        .executableTarget(
            name: "storecast",
            dependencies: ["StorecastRuntime", "PostgresClient", "Transcoder", "FFmpegCodecs", "ZeroMQ", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            swiftSettings: swift6),

        // MARK: Tests
        .target(name: "StorecastTestSupport", path: "Tests/StorecastTestSupport", swiftSettings: swift6),
        .testTarget(
            name: "RTMPTests",
            dependencies: ["RTMP", "BinaryCoding", "StorecastTestSupport", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: swift6),
        .testTarget(name: "MediaFormatsTests", dependencies: ["MediaFormats", "StorecastTestSupport"], swiftSettings: swift6),
        .testTarget(name: "FMP4Tests", dependencies: ["FMP4", "MediaFormats", "StorecastTestSupport"], swiftSettings: swift6),
        .testTarget(name: "HLSTests", dependencies: ["HLS", "StorecastTestSupport"], swiftSettings: swift6),
        .testTarget(name: "StorecastWireTests", dependencies: ["StorecastWire", "BinaryCoding", "StorecastTestSupport"], swiftSettings: swift6),
        .testTarget(
            name: "ServiceLogicTests",
            dependencies: ["Ingest", "Transcoder", "Packager", "MetricsCollector", "ControlPlane", "RTMP", "HLS", "StorecastWire", "StorecastRuntime", "PostgresClient", "FFmpegCodecs", "MediaFormats", "StorecastTestSupport", .product(name: "Logging", package: "swift-log"),
                           .product(name: "HTTPTypes", package: "swift-http-types"), .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                           .product(name: "Hummingbird", package: "hummingbird"), .product(name: "CompressNIO", package: "compress-nio"),
                           .product(name: "NIOCore", package: "swift-nio")],
            swiftSettings: swift6),
        .testTarget(
            name: "IngestChannelTests",
            dependencies: [
                "Ingest", "RTMP", "StorecastWire", "StorecastTestSupport", "ZeroMQ", "ConnectionBudget",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swift6),
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                "StorecastRuntime", "ControlPlane", "PostgresClient", "ZeroMQ", "StorecastWire", "FFmpegCodecs", "MediaFormats", "RTMP", "StorecastTestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swift6),
    ]
)
