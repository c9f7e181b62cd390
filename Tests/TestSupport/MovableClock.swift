package import Foundation
import Synchronization

/// The machine's time moved by an offset the test sets. A service under test reads it as its
/// clock, so a test passes a deadline or a give-up time by moving it, not by waiting for it.
package final class MovableClock: Sendable {
    private let offset = Mutex<TimeInterval>(0)

    package init() {}

    /// The clock to hand the service.
    package var now: @Sendable () -> Date {
        { [self] in Date().addingTimeInterval(offset.withLock { $0 }) }
    }

    package func move(by seconds: TimeInterval) { offset.withLock { $0 += seconds } }
}
