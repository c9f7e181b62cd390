import Foundation
import Glibc

/// Threads of our own for work that blocks or computes for long: libpq and libcurl calls, writes
/// to stderr, scrypt, fixed-base tables, timer and listener loops. Swift's cooperative pool has
/// one thread per core; a call that blocks there stalls every task behind it. Jobs run in the
/// order they were submitted, on whichever thread is free.
///
/// Each thread keeps a `Local` value of its own for its whole life (a database connection, a curl
/// handle), made on that thread when it starts; a job gets it `inout` and never shares it.
///
/// With a `leaseTimeout`, a job still waiting for a thread when the timeout has passed is not run:
/// its `late` handler runs instead, at the timeout, so a caller hears at once that no thread was
/// free, and a thread goes to work that someone still waits for, not to a backlog whose callers
/// gave up. An async caller cancelled while its job waits is answered `CancellationError`, and
/// the job never runs (`perform`).
///
/// A job leaves the queue the moment a thread takes it: what it captured (a password, a request
/// body, a key's tables) lives only as long as the job runs.
///
/// `close()` is the one way to stop: no new jobs are accepted, jobs already queued still run, then
/// the threads end. A long-running job (a loop) asks `isClosed` to know when to return.
package final class BlockingWorkers<Local>: @unchecked Sendable {
    package typealias Job = @Sendable (inout Local) -> Void

    private struct Entry {
        let run: Job
        /// Decides between this job starting and its caller giving up; nil: it always runs.
        let decision: StartOrGiveUp?
    }

    package let threadCount: Int
    private let leaseTimeout: Duration?
    private let condition = NSCondition()  // guards every field below
    private var entries = JobRing<Entry>()
    private var closed = false
    private var busy = 0

    /// Starts `threads` threads named `name-0`, `name-1`, … (just `name` for one; the kernel keeps
    /// 15 bytes of a name); each first makes its `Local` with `local`.
    package init(name: String, threads: Int = 1, leaseTimeout: Duration? = nil, local: @escaping @Sendable () -> Local)
    {
        threadCount = max(1, threads)
        self.leaseTimeout = leaseTimeout
        for index in 0..<threadCount {
            let threadName = String(
                decoding: (threadCount == 1 ? name : "\(name)-\(index)").utf8.prefix(15), as: UTF8.self)
            // The thread holds the workers until it ends, which `close()` decides. Named from
            // inside, in the kernel (what `top -H` and `perf` show): a new thread starts with its
            // creator's name, and Foundation's `Thread.name` does not reliably reach the kernel.
            let thread = Thread { [self] in
                ThreadName.setForCurrentThread(threadName)
                work(local: local)
            }
            thread.start()
        }
    }

    /// Jobs running now.
    package var busyCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return busy
    }

    /// Jobs queued and not yet started (those given up on included, until a thread passes them).
    package var waitingCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return entries.count
    }

    package var isClosed: Bool {
        condition.lock()
        defer { condition.unlock() }
        return closed
    }

    /// Queues `job`; false (and nothing queued) once closed. `late` runs instead of `job` if the
    /// job is still waiting when the lease timeout passes.
    @discardableResult
    package func submit(_ job: @escaping Job, late: (@Sendable () -> Void)? = nil) -> Bool {
        guard let late, let leaseTimeout else { return enqueue(Entry(run: job, decision: nil)) }
        let decision = StartOrGiveUp()
        decision.onGiveUp(after: leaseTimeout) { _ in late() }
        if enqueue(Entry(run: job, decision: decision)) { return true }
        _ = decision.start()  // nothing queued: stops the timer, which must not answer a caller who hears `false`
        return false
    }

    /// Queues `job` to run unless `decision` gives up on it first; false (and nothing queued)
    /// once closed.
    package func submit(_ job: @escaping Job, unless decision: StartOrGiveUp) -> Bool {
        enqueue(Entry(run: job, decision: decision))
    }

    private func enqueue(_ entry: Entry) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !closed else { return false }
        entries.append(entry)
        condition.signal()
        return true
    }

    /// Stops accepting jobs; queued ones still run, then the threads end.
    package func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
    }

    private func work(local make: () -> Local) {
        var local = make()
        while true {
            // Scoped so the job, and all it captured, is released before the thread waits again.
            let more: Bool = {
                guard let entry = next() else { return false }
                if entry.decision?.start() ?? true { entry.run(&local) }
                return true
            }()
            guard more else { return }
            condition.lock()
            busy -= 1
            condition.unlock()
        }
    }

    /// Blocks the calling (worker) thread until a job arrives; nil once closed and drained.
    private func next() -> Entry? {
        condition.lock()
        defer { condition.unlock() }
        while entries.isEmpty && !closed { condition.wait() }
        guard let entry = entries.popFirst() else { return nil }
        busy += 1
        return entry
    }
}

extension BlockingWorkers {
    /// Runs `body` with the thread's `Local` and hands its result back to async code. A caller
    /// cancelled while the job waits gets `CancellationError` and the job never runs; one still
    /// waiting at the lease timeout gets `late`; `closed` once the workers are closed.
    package func perform<T: Sendable>(
        late: @autoclosure @escaping @Sendable () -> any Error,
        closed: @autoclosure @escaping @Sendable () -> any Error,
        _ body: @escaping @Sendable (inout Local) throws -> T
    ) async throws -> T {
        let decision = StartOrGiveUp()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                decision.onGiveUp(after: leaseTimeout) { reason in
                    continuation.resume(throwing: reason == .cancelled ? CancellationError() : late())
                }
                let accepted = submit(
                    { local in continuation.resume(with: Result { try body(&local) }) }, unless: decision)
                if !accepted, decision.start() { continuation.resume(throwing: closed()) }
            }
        } onCancel: {
            decision.cancel()
        }
    }
}

extension BlockingWorkers where Local == Void {
    /// Workers without per-thread state.
    package convenience init(name: String, threads: Int = 1, leaseTimeout: Duration? = nil) {
        self.init(name: name, threads: threads, leaseTimeout: leaseTimeout, local: {})
    }

    /// Runs `body` on a worker thread and hands its result back to async code.
    /// A caller cancelled while the job waits gets `CancellationError`, and the job never runs.
    package func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await perform(late: WorkersError.late, closed: WorkersError.closed) { _ in try body() }
    }
}

/// Why a job handed to `BlockingWorkers.run` did not run.
package enum WorkersError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The workers were closed before the job was queued.
    case closed
    /// The job waited for a thread longer than the workers' lease timeout.
    case late

    package var description: String {
        switch self {
        case .closed: "the workers are closed"
        case .late: "no worker thread was free within the lease timeout"
        }
    }
}
