import Foundation

/// Runs a test's long synchronous computation (the differential and generated-input tests, which
/// take seconds in a debug build) on threads of its own instead of the cooperative pool. The pool
/// has one thread per core; with two such tests on it, every fake's handler and every other
/// test's task waited behind them, and timing and retry-count assertions elsewhere failed.
/// The body runs in the calling task, so `#expect` still reports to the running test. (For a
/// blocking wait rather than computation, `onOwnThread` gives the wait a thread of its own.)
package func offThePool<T>(_ body: () throws -> T) async rethrows -> T {
    try await withTaskExecutorPreference(HeavyWorkExecutor.shared) { try body() }
}

/// A task executor with two threads of its own.
final class HeavyWorkExecutor: TaskExecutor, @unchecked Sendable {
    static let shared = HeavyWorkExecutor(threads: 2)

    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []

    private init(threads: Int) {
        for index in 0..<threads {
            let thread = Thread { [unowned self] in self.work() }
            thread.name = "test-heavy-\(index)"
            thread.start()
        }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        condition.lock()
        jobs.append(unowned)
        condition.signal()
        condition.unlock()
    }

    private func work() {
        while true {
            condition.lock()
            while jobs.isEmpty { condition.wait() }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
