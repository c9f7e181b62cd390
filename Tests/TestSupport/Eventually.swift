import Synchronization

/// Something a pool's job captures, watched through a weak reference.
package final class Captured: Sendable {
    package init() {}
}

/// Waits (at most `bound`) until `condition` holds, polling; false if it never did. For a state
/// another thread reaches on its own time (a worker letting go of a job, a fake seeing a
/// request), so a test waits for that, not for a fixed time. The bound only ends a wait that will
/// never succeed: it is generous, since a machine busy with other work may take long to get there.
package func eventually(within bound: Duration = .seconds(60), _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + bound
    while !condition() {
        guard ContinuousClock.now < deadline else { return false }
        try? await Task.sleep(for: .milliseconds(2))
    }
    return true
}

/// The task's value if it ends within `bound`; nil if it is still running then.
package func value<T: Sendable>(of task: Task<T, Never>, within bound: Duration) async -> T? {
    await withTaskGroup(of: T?.self) { group in
        group.addTask { await task.value }
        group.addTask {
            try? await Task.sleep(for: bound); return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
}

/// A weak reference a test can hand to a `@Sendable` check.
package final class WeakBox: Sendable {
    private let box = Mutex<Weak>(Weak())
    private struct Weak { weak var object: Captured? }
    package init(_ object: Captured) { box.withLock { $0.object = object } }
    package var isReleased: Bool { box.withLock { $0.object == nil } }
}

/// `eventually` for a condition read asynchronously (an actor's state).
package func eventually(within bound: Duration = .seconds(60), _ condition: () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + bound
    while await !condition() {
        guard ContinuousClock.now < deadline else { return false }
        try? await Task.sleep(for: .milliseconds(2))
    }
    return true
}

/// Holds whoever waits until `open()`; opening first lets every later waiter through. A fake's
/// handler or a read the test releases when it chooses, with no polling.
package actor Latch {
    private var isOpen = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    package init() {}

    package func wait() async {
        if isOpen { return }
        await withCheckedContinuation { waiters.append($0) }
    }

    package func open() {
        isOpen = true
        waiters.forEach { $0.resume() }
        waiters = []
    }
}
