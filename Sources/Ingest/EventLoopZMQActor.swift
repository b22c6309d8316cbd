import NIOCore
import Synchronization
import ZeroMQ

/// A ``ZMQActorBody`` run on a NIO event loop instead of a thread of its own: the body, and so
/// its sockets, live on that loop's thread, and commands posted from the loop are handled at once
/// (no hand-off, no wake-up of another thread). Only non-blocking ZeroMQ calls may be made there
/// (`send`/`receive` with `dontWait`); incoming messages are picked up by checking the sockets
/// after every command and every `pollInterval`, never by a blocking `zmq_poll`.
///
/// Ingest's dispatcher runs this way beside the RTMP connections on one loop: frames read in an
/// iteration of the loop go to ZeroMQ in the same iteration.
final class EventLoopZMQActor<Body: ZMQActorBody & SendableMetatype>: Sendable {
    /// What lives on the loop.
    private final class State {
        var body: Body?
        var timer: RepeatedTask?
        var nextTick: ContinuousClock.Instant
        init(body: Body, nextTick: ContinuousClock.Instant) {
            self.body = body
            self.nextTick = nextTick
        }
    }

    let eventLoop: any EventLoop
    private let state: NIOLoopBoundBox<State>
    private let onError: @Sendable (any Error) -> Void
    /// Set by ``stop()``: later commands are dropped without touching the loop (which may be gone).
    private let stopped = Atomic<Bool>(false)

    /// Creates the body on the loop (so bind errors are thrown here) and starts the timer that
    /// checks the sockets every `pollInterval` and ticks the body every `tickInterval`.
    init(
        on eventLoop: any EventLoop,
        tickInterval: Duration = .milliseconds(250),
        pollInterval: Duration = .milliseconds(50),
        onError: @escaping @Sendable (any Error) -> Void,
        makeBody: @escaping @Sendable () throws -> Body
    ) async throws {
        self.eventLoop = eventLoop
        self.onError = onError
        let clock = ContinuousClock()
        state = try await eventLoop.submit {
            NIOLoopBoundBox(State(body: try makeBody(), nextTick: clock.now.advanced(by: tickInterval)), eventLoop: eventLoop)
        }.get()
        try await eventLoop.submit { [self] in
            state.value.timer = eventLoop.scheduleRepeatedTask(initialDelay: .init(pollInterval), delay: .init(pollInterval)) { [weak self] _ in
                guard let self else { return }
                drainSockets()
                let now = clock.now
                guard now >= state.value.nextTick, let body = state.value.body else { return }
                state.value.nextTick = now.advanced(by: tickInterval)
                do { try body.tick(now: now) } catch { onError(error) }
            }
        }.get()
    }

    /// Handles `command` now when called on the loop, else queues it there. Commands keep the
    /// order they were sent in from any one thread.
    func send(_ command: Body.Command) {
        if stopped.load(ordering: .relaxed) { return }
        if eventLoop.inEventLoop {
            handle(command)
        } else {
            eventLoop.execute { [self] in handle(command) }
        }
    }

    /// Runs `task` on the loop, unless the actor has stopped (the loop may be gone by then: a
    /// reconnect window that expires during shutdown).
    func execute(_ task: @escaping @Sendable () -> Void) {
        if stopped.load(ordering: .relaxed) { return }
        eventLoop.execute(task)
    }

    private func handle(_ command: Body.Command) {
        guard let body = state.value.body else { return }  // stopped
        do { try body.handle(command) } catch { onError(error) }
        drainSockets()
    }

    /// Everything queued on the body's sockets, without blocking (a bounded number per socket,
    /// so a flood cannot hold the loop).
    private func drainSockets() {
        guard let body = state.value.body else { return }
        for socket in body.readableSockets { _ = body.drainReadable(socket, onError: onError) }
    }

    /// Stops the timer and releases the body on the loop (its sockets close there).
    func stop() async {
        if stopped.exchange(true, ordering: .acquiringAndReleasing) { return }
        try? await eventLoop.submit { [self] in
            state.value.timer?.cancel()
            state.value.timer = nil
            state.value.body = nil
        }.get()
    }
}
