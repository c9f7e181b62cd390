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
/// its `late` handler runs instead (on the thread that would have run it), so a thread goes to work
/// that someone still waits for, not to a backlog whose callers gave up.
///
/// `close()` is the one way to stop: no new jobs are accepted, jobs already queued still run, then
/// the threads end. A long-running job (a loop) asks `isClosed` to know when to return.
package final class BlockingWorkers<Local>: @unchecked Sendable {
    package typealias Job = (inout Local) -> Void

    private struct Entry {
        let run: Job
        let late: (() -> Void)?
        let enqueued: ContinuousClock.Instant?
    }

    package let threadCount: Int
    private let leaseTimeout: Duration?
    private let condition = NSCondition()  // guards every field below
    private var entries: [Entry] = []
    private var head = 0
    private var closed = false
    private var busy = 0

    /// Starts `threads` threads named `name-0`, `name-1`, … (just `name` for one; the kernel keeps
    /// 15 bytes of a name); each first makes its `Local` with `local`.
    package init(name: String, threads: Int = 1, leaseTimeout: Duration? = nil, local: @escaping @Sendable () -> Local) {
        threadCount = max(1, threads)
        self.leaseTimeout = leaseTimeout
        for index in 0..<threadCount {
            let threadName = String(decoding: (threadCount == 1 ? name : "\(name)-\(index)").utf8.prefix(15), as: UTF8.self)
            // The thread holds the workers until it ends, which `close()` decides. Named from
            // inside, in the kernel (what `top -H` and `perf` show): a new thread starts with its
            // creator's name, and Foundation's `Thread.name` does not reliably reach the kernel.
            let thread = Thread { [self] in
                Self.nameCurrentThread(threadName)
                work(local: local)
            }
            thread.start()
        }
    }

    /// `pthread_setname_np` is not visible to Swift here; this is the file it writes.
    private static func nameCurrentThread(_ name: String) {
        let file = Glibc.open("/proc/thread-self/comm", O_WRONLY)
        guard file >= 0 else { return }
        _ = name.utf8CString.withUnsafeBufferPointer { Glibc.write(file, $0.baseAddress, $0.count - 1) }
        _ = Glibc.close(file)
    }

    /// Jobs running now.
    package var busyCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return busy
    }

    /// Jobs queued and not yet started.
    package var waitingCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return entries.count - head
    }

    package var isClosed: Bool {
        condition.lock()
        defer { condition.unlock() }
        return closed
    }

    /// Queues `job`; false (and nothing queued) once closed. `late` runs instead of `job` if the
    /// job waited longer than the lease timeout.
    @discardableResult
    package func submit(_ job: @escaping Job, late: (() -> Void)? = nil) -> Bool {
        let entry = Entry(run: job, late: late, enqueued: leaseTimeout == nil ? nil : ContinuousClock.now)
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
        while let entry = next() {
            if let late = entry.late, let enqueued = entry.enqueued, let leaseTimeout, ContinuousClock.now - enqueued > leaseTimeout {
                late()
            } else {
                entry.run(&local)
            }
            condition.lock()
            busy -= 1
            condition.unlock()
        }
    }

    /// Blocks the calling (worker) thread until a job arrives; nil once closed and drained.
    private func next() -> Entry? {
        condition.lock()
        defer { condition.unlock() }
        while head == entries.count && !closed { condition.wait() }
        guard head < entries.count else { return nil }
        let entry = entries[head]
        head += 1
        // Taken from the front by index; the array is compacted now and then, not on every job.
        if head > 64 && head * 2 > entries.count {
            entries.removeFirst(head)
            head = 0
        }
        busy += 1
        return entry
    }
}

extension BlockingWorkers where Local == Void {
    /// Workers without per-thread state.
    package convenience init(name: String, threads: Int = 1, leaseTimeout: Duration? = nil) {
        self.init(name: name, threads: threads, leaseTimeout: leaseTimeout, local: {})
    }

    /// Runs `body` on a worker thread and hands its result back to async code.
    package func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let accepted = submit({ _ in continuation.resume(with: Result { try body() }) },
                                  late: { continuation.resume(throwing: WorkersError.late) })
            if !accepted { continuation.resume(throwing: WorkersError.closed) }
        }
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
