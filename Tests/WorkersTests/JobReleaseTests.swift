import Foundation
import Synchronization
import TestSupport
import Testing
import Workers

/// Blocks a worker thread until `open()` is called (or a minute passes, so a failing test ends).
final class ThreadGate: Sendable {
    private let semaphore = DispatchSemaphore(value: 0)
    func wait() { _ = semaphore.wait(timeout: .now() + 60) }
    func open() { semaphore.signal() }
}

@Suite struct JobRelease {
    /// A job is let go the moment it has run: what it captured is freed then, not after dozens
    /// of later jobs (a password being hashed, a key's tables).
    @Test func whatAJobCapturedIsFreedOnceItHasRun() async throws {
        let workers = BlockingWorkers<Void>(name: "test-release", threads: 1)
        defer { workers.close() }
        var weak: WeakBox?
        do {
            let object = Captured()
            weak = WeakBox(object)
            _ = try await workers.run {
                _ = object; return 1
            }
        }
        let watched = try #require(weak)
        #expect(await eventually { watched.isReleased }, "the pool still holds a job it ran")
    }

    /// The shared compute pool (scrypt, fixed-base tables) as well.
    @Test func theComputePoolFreesWhatItsJobsCaptured() async throws {
        var weak: WeakBox?
        do {
            let object = Captured()
            weak = WeakBox(object)
            _ = try await SharedWorkers.computations.run {
                _ = object; return 1
            }
        }
        let watched = try #require(weak)
        #expect(await eventually { watched.isReleased }, "the compute pool still holds a job it ran")
    }

    /// A caller cancelled while its job waits for a thread hears so at once, and the job is
    /// skipped: a thread goes to work someone still waits for.
    @Test func aJobWhoseCallerWasCancelledWhileQueuedIsSkipped() async throws {
        let workers = BlockingWorkers<Void>(name: "test-cancel", threads: 1)
        defer { workers.close() }
        let gate = ThreadGate()
        let ran = Mutex(0)
        let blocking = Mutex(false)
        workers.submit { _ in
            blocking.withLock { $0 = true }
            gate.wait()
        }
        // The thread has taken the first job (a busy machine may start it late), so the next waits.
        #expect(await eventually { blocking.withLock { $0 } })
        let queued = Task { try await workers.run { ran.withLock { $0 += 1 } } }
        #expect(await eventually { workers.waitingCount == 1 })
        queued.cancel()
        await #expect(throws: CancellationError.self) { try await queued.value }  // while the thread is still blocked
        gate.open()
        _ = try await workers.run { 0 }  // jobs run in order: the cancelled one has been passed
        #expect(ran.withLock { $0 } == 0, "a cancelled caller's job ran")
    }

    /// Cancelled before it was even queued: the job never runs either.
    @Test func aCallerCancelledBeforeQueueingNeverRunsItsJob() async throws {
        let workers = BlockingWorkers<Void>(name: "test-precancel", threads: 1)
        defer { workers.close() }
        let ran = Mutex(0)
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await workers.run { ran.withLock { $0 += 1 } }
        }
        await #expect(throws: CancellationError.self) { try await task.value }
        _ = try await workers.run { 0 }
        #expect(ran.withLock { $0 } == 0)
    }
}
