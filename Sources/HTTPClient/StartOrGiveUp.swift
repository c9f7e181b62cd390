import Foundation
import Synchronization
import Workers

/// Decides once between a queued job starting and its caller giving up on it: the first of
/// `start()` and the timeout wins, and the loser does nothing. The timeout is the process's one
/// deadline thread (`DeadlineWatcher`), not a sleeping task per request.
final class StartOrGiveUp: Sendable {
    private struct Decision {
        var decided = false
        var watch: Int?
    }

    private let decision = Mutex(Decision())

    /// Runs `giveUp` after `timeout` unless `start()` came first.
    func giveUp(after timeout: Duration, _ giveUp: @escaping @Sendable () -> Void) {
        // Lock order: this lock, then the watcher's (which fires callbacks outside its own).
        decision.withLock { decision in
            guard !decision.decided else { return }
            decision.watch = DeadlineWatcher.shared.add(deadline: .now + timeout) { [self] in
                guard decide() else { return }
                giveUp()
            }
        }
    }

    /// True when the job may run (the timeout has not won); stops the timer.
    func start() -> Bool {
        decision.withLock { decision in
            guard Self.decide(&decision) else { return false }
            if let watch = decision.watch { DeadlineWatcher.shared.remove(watch) }
            return true
        }
    }

    private func decide() -> Bool { decision.withLock { Self.decide(&$0) } }

    private static func decide(_ decision: inout Decision) -> Bool {
        guard !decision.decided else { return false }
        decision.decided = true
        return true
    }
}
