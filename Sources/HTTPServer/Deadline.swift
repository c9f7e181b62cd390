import Foundation
import Workers

package struct DeadlineExceeded: Error {}

/// Runs `body`, or gives up with `DeadlineExceeded` once `timeout` passes. The body is cancelled
/// but not awaited: work that ignores cancellation (a blocking database call) cannot hold the
/// response hostage.
package func withDeadline<T: Sendable>(_ timeout: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    let gate = FirstResult<T>()
    return try await withCheckedThrowingContinuation { continuation in
        gate.install(continuation)
        let work = Task {
            let result: Result<T, any Error>
            do { result = .success(try await body()) } catch { result = .failure(error) }
            gate.finish(result)
        }
        let watch = DeadlineWatcher.shared.add(deadline: .now + timeout) {
            if gate.finish(.failure(DeadlineExceeded())) { work.cancel() }
        }
        gate.onFinish { DeadlineWatcher.shared.remove(watch) }
    }
}

/// One thread of its own that fires expired deadlines. A `Task.sleep` per request would do the
/// same, but a cancelled sleep keeps its timer allocated until the original deadline: at tens of
/// thousands of requests a second with 30-second deadlines, that is hundreds of megabytes held
/// for nothing.
final class DeadlineWatcher: @unchecked Sendable {
    static let shared = DeadlineWatcher()

    private let condition = NSCondition()  // guards the fields below
    private var entries: [Int: (deadline: ContinuousClock.Instant, fire: @Sendable () -> Void)] = [:]
    private var nextID = 0
    /// The watcher's thread, for the life of the process.
    private let worker = BlockingWorkers<Void>(name: "deadlines")

    private init() {
        worker.submit { [unowned self] _ in run() }
    }

    func add(deadline: ContinuousClock.Instant, fire: @escaping @Sendable () -> Void) -> Int {
        condition.lock()
        defer { condition.unlock() }
        nextID += 1
        if entries.isEmpty { condition.signal() }  // only a sleeping watcher needs waking
        entries[nextID] = (deadline, fire)
        return nextID
    }

    func remove(_ id: Int) {
        condition.lock()
        entries[id] = nil
        condition.unlock()
    }

    private func run() {
        while true {
            condition.lock()
            while entries.isEmpty { condition.wait() }
            // A 25 ms tick is precise enough for request deadlines and costs nothing when idle.
            _ = condition.wait(until: Date(timeIntervalSinceNow: 0.025))
            let now = ContinuousClock.now
            let expired = entries.filter { $0.value.deadline <= now }
            for id in expired.keys { entries[id] = nil }
            condition.unlock()
            for entry in expired.values { entry.fire() }
        }
    }
}

/// Resumes a continuation with whichever result arrives first; later ones are dropped.
private final class FirstResult<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<T, any Error>?
    private var finished = false
    private var cleanup: (@Sendable () -> Void)?

    func install(_ continuation: CheckedContinuation<T, any Error>) {
        lock.lock(); self.continuation = continuation; lock.unlock()
    }

    func onFinish(_ action: @escaping @Sendable () -> Void) {
        lock.lock()
        if finished { lock.unlock(); action(); return }
        cleanup = action
        lock.unlock()
    }

    @discardableResult
    func finish(_ result: Result<T, any Error>) -> Bool {
        lock.lock()
        guard !finished, let continuation else { lock.unlock(); return false }
        finished = true
        self.continuation = nil
        let action = cleanup
        cleanup = nil
        lock.unlock()
        continuation.resume(with: result)
        action?()
        return true
    }
}
