import Foundation
import Workers

package struct DeadlineExceeded: Error {}

/// Runs `body`, or gives up with `DeadlineExceeded` once `timeout` passes. The body is cancelled
/// but not awaited: work that ignores cancellation (a blocking database call) cannot hold the
/// response hostage.
/// The body sees its deadline as `RequestDeadline.current`, so work inside it (a store call) can
/// end in time instead of being cut off. The body runs on `executor` (nil: the global pool).
package func withDeadline<T: Sendable>(
    _ timeout: Duration, on executor: (any TaskExecutor)? = nil,
    _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    let gate = FirstResult<T>()
    let deadline = ContinuousClock.now + timeout
    return try await withCheckedThrowingContinuation { continuation in
        gate.install(continuation)
        let work = Task(executorPreference: executor) {
            let result: Result<T, any Error>
            do { result = .success(try await RequestDeadline.$current.withValue(deadline) { try await body() }) } catch
            { result = .failure(error) }
            gate.finish(result)
        }
        let watch = DeadlineWatcher.shared.add(deadline: deadline) {
            if gate.finish(.failure(DeadlineExceeded())) { work.cancel() }
        }
        gate.onFinish { DeadlineWatcher.shared.remove(watch) }
    }
}

/// When the request being handled gives up (`withDeadline`); nil outside one.
package enum RequestDeadline {
    @TaskLocal package static var current: ContinuousClock.Instant?
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
