import Synchronization

/// Decides once between a queued job starting and its caller giving up on it (a timeout, or the
/// caller's task cancelled): the first wins, and the loser does nothing. The timeout is the
/// process's one deadline thread (`DeadlineWatcher`), not a sleeping task per job.
package final class StartOrGiveUp: Sendable {
    package enum Reason: Sendable { case timedOut, cancelled }

    private struct Decision {
        var decided = false
        var watch: Int?
        /// What giving up does; nil until `onGiveUp`.
        var giveUp: (@Sendable (Reason) -> Void)?
        /// Cancelled before `onGiveUp` said what giving up does.
        var cancelledEarly = false
    }

    private let decision = Mutex(Decision())

    package init() {}

    /// What giving up does (answer the caller), and after how long it happens unless `start()`
    /// came first (nil: only `cancel()` gives up). Runs `giveUp` at once if already cancelled.
    package func onGiveUp(after timeout: Duration?, _ giveUp: @escaping @Sendable (Reason) -> Void) {
        // Lock order: this lock, then the watcher's (which fires callbacks outside its own).
        let now = decision.withLock { decision -> Bool in
            guard !decision.decided else { return false }
            if decision.cancelledEarly {
                decision.decided = true
                return true
            }
            decision.giveUp = giveUp
            if let timeout {
                decision.watch = DeadlineWatcher.shared.add(deadline: .now + timeout) { [self] in abandon(.timedOut) }
            }
            return false
        }
        if now { giveUp(.cancelled) }
    }

    /// Gives up now unless the job has started: for a caller whose task was cancelled.
    package func cancel() { abandon(.cancelled) }

    private func abandon(_ reason: Reason) {
        let giveUp = decision.withLock { decision -> (@Sendable (Reason) -> Void)? in
            guard !decision.decided else { return nil }
            guard let giveUp = decision.giveUp else {
                decision.cancelledEarly = reason == .cancelled
                return nil
            }
            decision.decided = true
            decision.giveUp = nil
            if let watch = decision.watch { DeadlineWatcher.shared.remove(watch) }
            return giveUp
        }
        giveUp?(reason)
    }

    /// True when the job may run (no one has given up); stops the timer.
    package func start() -> Bool {
        decision.withLock { decision in
            guard !decision.decided, !decision.cancelledEarly else { return false }
            decision.decided = true
            decision.giveUp = nil
            if let watch = decision.watch { DeadlineWatcher.shared.remove(watch) }
            return true
        }
    }
}
