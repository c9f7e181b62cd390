import Foundation
import TestSupport
import Testing
import Workers

@Suite struct BlockingWorkersTests {
    /// Blocks a worker thread until `open()` is called (or a minute passes, so a failing test ends).
    final class Gate: Sendable {
        private let semaphore = DispatchSemaphore(value: 0)
        func wait() { _ = semaphore.wait(timeout: .now() + 60) }
        func open() { semaphore.signal() }
    }

    /// A number several threads change.
    final class Tally: @unchecked Sendable {
        private let lock = NSLock()
        private var count = 0  // guarded by lock
        func add(_ amount: Int = 1) { lock.withLock { count += amount } }
        var value: Int { lock.withLock { count } }
    }

    struct Refused: Error {}

    @Test func workRunsOnTheWorkersOwnThreadsAndItsResultComesBack() async throws {
        let workers = BlockingWorkers<Void>(name: "test-own", threads: 2)
        defer { workers.close() }
        let name = try await workers.run { kernelThreadName() }
        #expect(name == "test-own-0" || name == "test-own-1")
        await #expect(throws: Refused.self) { try await workers.run { () throws -> Int in throw Refused() } }
    }

    @Test func eachThreadKeepsItsLocalValueAcrossJobsAndJobsRunInOrder() async throws {
        let workers = BlockingWorkers<[Int]>(name: "test-local", threads: 1, local: { [] })
        defer { workers.close() }
        let seen = await withCheckedContinuation { (continuation: CheckedContinuation<[Int], Never>) in
            for number in 1...5 {
                workers.submit { local in
                    local.append(number)
                    if number == 5 { continuation.resume(returning: local) }
                }
            }
        }
        #expect(seen == [1, 2, 3, 4, 5])
    }

    @Test func closingRunsWhatIsQueuedThenRefusesNewWork() async throws {
        let workers = BlockingWorkers<Void>(name: "test-close", threads: 1)
        let gate = Gate()
        let ran = Tally()
        workers.submit { _ in gate.wait() }
        for _ in 0..<3 { workers.submit { _ in ran.add() } }
        workers.close()
        #expect(workers.isClosed)
        #expect(!workers.submit { _ in ran.add(100) })
        await #expect(throws: WorkersError.closed) { try await workers.run { 1 } }
        gate.open()
        // The job offered after close was refused (never queued), so once the queued three ran
        // nothing else can: 100 more would show it had run.
        #expect(await eventually { ran.value >= 3 })
        #expect(ran.value == 3, "jobs queued before close still run, none after")
    }

    @Test func aJobThatWaitedPastTheLeaseTimeoutIsNotRunAndItsCallerHearsSo() async throws {
        let workers = BlockingWorkers<Void>(name: "test-lease", threads: 1, leaseTimeout: .milliseconds(50))
        defer { workers.close() }
        let gate = Gate()
        workers.submit { _ in gate.wait() }
        let ran = Tally(), late = Tally()
        workers.submit({ _ in ran.add() }, late: { late.add() })
        let waited = Task { try await workers.run { ran.add() } }
        // Bounded: on a starved machine a wait that never ends would hang the whole run.
        let deadline = ContinuousClock.now + .seconds(30)
        while workers.busyCount < 1 || workers.waitingCount < 2 {
            guard ContinuousClock.now < deadline else {
                gate.open()
                Issue.record("the jobs were never all queued behind the blocked one")
                return
            }
            try await Task.sleep(for: .milliseconds(5))
        }
        // The caller hears at the lease timeout, while the only thread is still blocked.
        await #expect(throws: WorkersError.late) { try await waited.value }
        #expect(workers.busyCount == 1, "the blocked job holds the only thread")
        gate.open()
        // A job that finds a free thread in time runs as usual (on a loaded machine even a free
        // thread can take longer than the 50 ms lease to pick one up: asked until served). Jobs
        // run in order, so both late ones have been passed by then.
        var served: Int?
        while served == nil, ContinuousClock.now < deadline { served = try? await workers.run { 7 } }
        #expect(served == 7)
        #expect(await eventually { late.value == 1 }, "the late handler ran once")
        #expect(ran.value == 0)
    }
}

@Suite struct SharedWorkersTests {
    @Test func computationsRunOnTheirOwnThreadsOnePerCore() async throws {
        #expect(SharedWorkers.computations.threadCount == ProcessInfo.processInfo.activeProcessorCount)
        let name = try await SharedWorkers.computations.run { kernelThreadName() }
        #expect(name.hasPrefix("compute-"))
    }
}

/// The calling thread's name as the kernel has it (what `top -H` shows).
private func kernelThreadName() -> String {
    let name = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
    return name.trimmingCharacters(in: .newlines)
}
