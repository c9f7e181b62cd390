import Foundation

/// Runs a test's long synchronous computation (the differential and generated-input tests, which
/// take seconds in a debug build) on threads of its own instead of the cooperative pool. The pool
/// has one thread per core; with two such tests on it, every fake's handler and every other
/// test's task waited behind them, and timing and retry-count assertions elsewhere failed.
/// The body runs in the calling task, so `#expect` still reports to the running test. (For a
/// blocking wait rather than computation, `onOwnThread` gives the wait a thread of its own.)
package func offThePool<T>(_ body: () throws -> T) async rethrows -> T {
    try await withTaskExecutorPreference(OwnThreadsExecutor.heavyWork) { try body() }
}

/// Where the fake stores and receivers answer (`router.build(handlerExecutor: FakeServing.executor)`):
/// threads of their own, so a fake answers as promptly as a remote service would while the
/// test process's cooperative threads are busy with other tests.
package enum FakeServing {
    package static let executor: any TaskExecutor = OwnThreadsExecutor.fakes
}

/// A task executor with threads of its own.
final class OwnThreadsExecutor: TaskExecutor, @unchecked Sendable {
    static let heavyWork = OwnThreadsExecutor(threads: 2, name: "test-heavy")
    static let fakes = OwnThreadsExecutor(threads: 4, name: "test-fake")

    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []

    private init(threads: Int, name: String) {
        for index in 0..<threads {
            let thread = Thread { [unowned self] in self.work() }
            thread.name = "\(name)-\(index)"
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
