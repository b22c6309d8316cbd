import Foundation
import Synchronization

/// What runs on a ``ZMQActor``'s thread: it creates and owns its sockets there and is driven by
/// readable sockets, posted commands and a periodic tick.
public protocol ZMQActorBody: AnyObject {
    associatedtype Command: Sendable
    /// Sockets to wait on. Read again after every wake-up, so a body may add or drop sockets.
    var readableSockets: [ZMQSocket] { get }
    func socketReadable(_ socket: ZMQSocket) throws
    func handle(_ command: Command) throws
    /// Called at least every `tickInterval` (heartbeats, liveness checks).
    func tick(now: ContinuousClock.Instant) throws
}

extension ZMQActorBody {
    /// Hands what is queued on `socket` to ``socketReadable(_:)`` without blocking, at most
    /// `maximum` messages (a flood must not starve the owner's other work). Returns false when
    /// the context was terminated: the owner should stop.
    public func drainReadable(_ socket: ZMQSocket, maximum: Int = 256, onError: (any Error) -> Void) -> Bool {
        var drained = 0
        while drained < maximum, socket.hasPendingInput {
            do {
                try socketReadable(socket)
            } catch let error as ZMQError where error.wouldBlock {
                break
            } catch let error as ZMQError where error.isContextTerminated {
                return false
            } catch {
                onError(error)
            }
            drained += 1
        }
        return true
    }
}

/// A dedicated thread owning ZeroMQ sockets, after czmq's `zactor`: other threads talk to it by
/// posting Sendable commands, which are queued and signalled through an eventfd that `zmq_poll`
/// watches beside the sockets. Sockets never leave the thread.
public final class ZMQActor<Command: Sendable>: Sendable {
    /// State shared between posting threads and the actor thread.
    final class Mailbox: Sendable {
        let queue = Mutex<[Command]>([])
        let stopping = Atomic<Bool>(false)
        let wakeup: WakeupSignal
        init() throws { wakeup = try WakeupSignal() }

        func take() -> [Command] {
            queue.withLock { q in
                let c = q
                q.removeAll(keepingCapacity: true)
                return c
            }
        }
    }

    private let mailbox: Mailbox
    private let finished = DispatchSemaphore(value: 0)
    public let name: String

    /// Starts the thread and waits until `makeBody` has run on it, so bind and connect errors are
    /// thrown here rather than lost.
    public init<Body: ZMQActorBody>(
        name: String,
        tickInterval: Duration = .milliseconds(250),
        onError: @escaping @Sendable (any Error) -> Void,
        makeBody: @escaping @Sendable () throws -> Body
    ) throws where Body.Command == Command {
        self.name = name
        let mailbox = try Mailbox()
        self.mailbox = mailbox
        let ready = DispatchSemaphore(value: 0)
        let startError = StartError()
        let finished = self.finished
        let thread = Thread {
            defer { finished.signal() }
            let body: Body
            do {
                body = try makeBody()
            } catch {
                startError.value.withLock { $0 = error }
                ready.signal()
                return
            }
            ready.signal()
            Self.run(body: body, mailbox: mailbox, tickInterval: tickInterval, onError: onError)
        }
        thread.name = name
        thread.start()
        ready.wait()
        if let error = startError.value.withLock({ $0 }) { throw error }
    }

    private final class StartError: Sendable {
        let value = Mutex<(any Error)?>(nil)
    }

    private static func run<Body: ZMQActorBody>(
        body: Body, mailbox: Mailbox,
        tickInterval: Duration, onError: @Sendable (any Error) -> Void
    ) where Body.Command == Command {
        let clock = ContinuousClock()
        let poller = ZMQPoller()
        var nextTick = clock.now
        let tickMs = Self.milliseconds(tickInterval)
        let wakeup = mailbox.wakeup
        while !mailbox.stopping.load(ordering: .acquiring) {
            let sockets = body.readableSockets
            let now = clock.now
            let wait = max(0, min(tickMs, Self.milliseconds(nextTick - now)))
            let readable: [Bool]
            do {
                readable = try poller.pollReadable(sockets.map { .socket($0) } + [.fileDescriptor(wakeup.fileDescriptor)], timeoutMilliseconds: wait)
            } catch let error as ZMQError where error.isContextTerminated {
                return
            } catch {
                onError(error)
                continue
            }
            if readable.last == true {
                wakeup.drain()
                for command in mailbox.take() {
                    do { try body.handle(command) } catch { onError(error) }
                }
            }
            // Drain everything queued on each readable socket before polling again.
            for (index, socket) in sockets.enumerated() where readable[index] {
                guard body.drainReadable(socket, onError: onError) else { return }
            }
            if clock.now >= nextTick {
                nextTick = clock.now.advanced(by: tickInterval)
                do { try body.tick(now: clock.now) } catch { onError(error) }
            }
        }
    }

    private static func milliseconds(_ d: Duration) -> Int {
        let c = d.components
        return Int(c.seconds * 1000 + c.attoseconds / 1_000_000_000_000_000)
    }

    /// Queues a command for the actor's thread. Safe from any thread, never blocks on I/O.
    public func send(_ command: Command) {
        // Only the first command of a batch needs to wake the thread: it drains the whole queue.
        let wasEmpty = mailbox.queue.withLock { q -> Bool in
            q.append(command)
            return q.count == 1
        }
        if wasEmpty { mailbox.wakeup.signal() }
    }

    /// Stops the loop and waits for the thread to finish; its sockets are closed on exit.
    public func stop() {
        if mailbox.stopping.exchange(true, ordering: .acquiringAndReleasing) { return }
        mailbox.wakeup.signal()
        finished.wait()
    }
}
