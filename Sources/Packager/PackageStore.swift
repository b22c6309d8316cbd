import Synchronization

/// What the HTTP side reads: the current package of every stream, keyed by "tenant/stream".
/// Written by the packaging thread, read by request handlers; recent media lives in memory.
public final class PackageStore: Sendable {
    private let packages = Mutex<[String: StreamPackage]>([:])

    public init() {}

    public static func key(tenant: String, stream: String) -> String { "\(tenant)/\(stream)" }

    public func update(_ key: String, _ body: (inout StreamPackage?) -> Void) {
        packages.withLock { all in
            var value = all[key]
            body(&value)
            all[key] = value
        }
    }

    public func package(_ key: String) -> StreamPackage? {
        packages.withLock { $0[key] }
    }

    public func keys() -> [String] {
        packages.withLock { Array($0.keys).sorted() }
    }
}
