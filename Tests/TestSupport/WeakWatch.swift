import Synchronization

/// Something a pool's job captures, watched through a weak reference.
package final class Captured: Sendable {
    package init() {}
}

/// Waits (bounded) until `released()` holds: a worker thread lets go of a job just after the job
/// has answered its caller, so the test waits for that, not for a fixed time.
package func eventually(_ released: () -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + .seconds(10)
    while !released() {
        guard ContinuousClock.now < deadline else { return false }
        try await Task.sleep(for: .milliseconds(2))
    }
    return true
}

/// A weak reference a test can hand to a `@Sendable` check.
package final class WeakBox: Sendable {
    private let box = Mutex<Weak>(Weak())
    private struct Weak { weak var object: Captured? }
    package init(_ object: Captured) { box.withLock { $0.object = object } }
    package var isReleased: Bool { box.withLock { $0.object == nil } }
}

