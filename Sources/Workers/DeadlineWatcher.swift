import Foundation

/// One thread of its own that fires expired deadlines, for every module: request deadlines, a
/// connection's receive clock, an outbound request's wait for a transfer slot. A `Task.sleep`
/// per deadline would do the same, but a cancelled sleep keeps its timer allocated until the original deadline: at tens of
/// thousands of requests a second with 30-second deadlines, that is hundreds of megabytes held
/// for nothing.
package final class DeadlineWatcher: @unchecked Sendable {
    package static let shared = DeadlineWatcher()

    private let condition = NSCondition()  // guards the fields below
    private var entries: [Int: (deadline: ContinuousClock.Instant, fire: @Sendable () -> Void)] = [:]
    private var nextID = 0
    /// The watcher's thread, for the life of the process.
    private let worker = BlockingWorkers<Void>(name: "deadlines")

    private init() {
        worker.submit { [unowned self] _ in run() }
    }

    /// Calls `fire` on the watcher's thread, within about 25 ms of `deadline`, unless removed
    /// first; never under the watcher's lock, so `fire` may take locks of its own.
    package func add(deadline: ContinuousClock.Instant, fire: @escaping @Sendable () -> Void) -> Int {
        condition.lock()
        defer { condition.unlock() }
        nextID += 1
        if entries.isEmpty { condition.signal() }  // only a sleeping watcher needs waking
        entries[nextID] = (deadline, fire)
        return nextID
    }

    package func remove(_ id: Int) {
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
