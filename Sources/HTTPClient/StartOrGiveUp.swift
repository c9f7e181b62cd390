import Foundation

/// Decides once between a queued job starting and its caller giving up on it: the first of
/// `start()` and the timeout wins, and the loser does nothing.
final class StartOrGiveUp: @unchecked Sendable {
    private let lock = NSLock()
    private var decided = false  // guarded by lock
    private var timer: Task<Void, Never>?  // guarded by lock

    /// Runs `giveUp` after `timeout` unless `start()` came first.
    func giveUp(after timeout: Duration, _ giveUp: @escaping @Sendable () -> Void) {
        let timer = Task { [self] in
            try? await Task.sleep(for: timeout)
            guard !Task.isCancelled, decide() else { return }
            giveUp()
        }
        lock.withLock { self.timer = timer }
    }

    /// True when the job may run (the timeout has not won); stops the timer.
    func start() -> Bool {
        guard decide() else { return false }
        lock.withLock { timer }?.cancel()
        return true
    }

    private func decide() -> Bool {
        lock.withLock {
            guard !decided else { return false }
            decided = true
            return true
        }
    }
}
