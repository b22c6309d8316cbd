import Foundation

/// Files the packager writes (recordings, the DVR window): POSIX writes so a failure keeps its
/// errno, and the operating system's words for it. Blocking: call from the writer's own queue.
enum MediaFile {
    /// A file write that failed, with the operating system's words ("No space left on device").
    struct WriteError: Error, CustomStringConvertible {
        var path: String
        var errno: Int32
        var description: String { String(cString: strerror(errno)) }
    }

    /// Writes `bytes` to a new file with POSIX calls, so a failure keeps its errno.
    static func save(_ path: String, _ bytes: [UInt8]) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw WriteError(path: path, errno: errno) }
        defer { close(fd) }
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, bytes.count - offset) }
            if n < 0 {
                if errno == EINTR { continue }
                let code = errno
                unlink(path)  // no half-written file for a player to find
                throw WriteError(path: path, errno: code)
            }
            offset += n
        }
    }

    static func reason(_ error: any Error) -> String {
        if let e = error as? WriteError { return e.description }
        let ns = error as NSError
        if let underlying = ns.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain {
            return String(cString: strerror(Int32(underlying.code)))
        }
        if ns.domain == NSPOSIXErrorDomain { return String(cString: strerror(Int32(ns.code))) }
        return ns.localizedDescription
    }
}
