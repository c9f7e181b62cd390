package import Foundation
package import ReceiptCore

/// The re-reads of Huawei that notifications ask for. An order notification is unsigned, so anyone
/// who knows an app id can make us ask Huawei about any token, spending the app's Huawei quota and
/// our threads; what that costs is bounded here:
/// - the outcome of a re-read is remembered by what it asked (`key`), at most `maxRemembered` of
///   them: the same notification sent again meanwhile is answered from memory. An answer that
///   settles the notification (`settle`) and a final refusal are remembered for
///   `outcomeLifetime`; a failure for now (Huawei unreachable) and an answer that does not back
///   the notification yet, whose outcome may soon change, for `unsettledLifetime`;
/// - a re-read already running for a key is awaited, not repeated;
/// - at most `atOnce` re-reads run at once, and each app may start `perAppPerMinute` a minute (a
///   token bucket). Past either, the notification is refused at once as retryable (Huawei sends
///   it again later; the cancelled-purchases poll reconciles anyway) instead of queueing.
package actor HuaweiNotificationReadGate {
    package typealias Outcome = Result<VerifiedPurchase?, NotificationRejection>

    private let limits: HuaweiAppGalleryConfiguration.NotificationReads
    private let now: @Sendable () -> Date
    private var remembered: [String: (outcome: Outcome, until: Date)] = [:]
    private var reading: [String: Task<Outcome, Never>] = [:]
    private var budgets: [String: (tokens: Double, at: Date)] = [:]
    /// Re-reads started since the gate was made (tests count them).
    package private(set) var started = 0

    package init(limits: HuaweiAppGalleryConfiguration.NotificationReads, now: @escaping @Sendable () -> Date = { Date() }) {
        self.limits = limits
        self.now = now
    }

    /// The purchase `read` finds (nil: Huawei knows nothing for this client), from memory when the
    /// same key was read lately. `app` is the Huawei app id whose budget a new re-read spends.
    /// Throws `NotificationRejection`: what the re-read threw, or retryable when too many run at
    /// once or the app's budget is spent.
    package func purchase(key: String, app: String,
                          read: @escaping @Sendable () async -> Outcome) async throws(NotificationRejection) -> VerifiedPurchase? {
        let moment = now()
        if let entry = remembered[key] {
            if entry.until > moment { return try entry.outcome.get() }
            remembered[key] = nil
        }
        let task: Task<Outcome, Never>
        if let running = reading[key] {
            task = running
        } else {
            guard reading.count < max(1, limits.atOnce) else {
                throw NotificationRejection(.retryable, reason: "HUAWEI_READS_BUSY", message: "too many notifications are being checked with Huawei now")
            }
            guard spend(app, at: moment) else {
                throw NotificationRejection(.retryable, reason: "HUAWEI_READ_BUDGET_SPENT",
                                            message: "this app's notifications have asked Huawei as often as they may for now")
            }
            started += 1
            // Not a child of the caller's task: a caller that gives up must not cancel the re-read
            // others wait for. The HTTP client's timeout bounds it.
            task = Task {
                let outcome = await read()
                self.finish(key, outcome)
                return outcome
            }
            reading[key] = task
        }
        return try await task.value.get()
    }

    /// The answer remembered for `key` settles its notification (it backs the event, or shows
    /// there is nothing to record): kept for `outcomeLifetime` from now.
    package func settle(_ key: String) {
        guard let entry = remembered[key], case .success = entry.outcome else { return }
        remembered[key] = (entry.outcome, now().addingTimeInterval(Self.seconds(limits.outcomeLifetime)))
    }

    /// Files the outcome of a re-read before anyone is given it: unsettled until `settle` says
    /// otherwise, unless it is a final refusal.
    private func finish(_ key: String, _ outcome: Outcome) {
        reading[key] = nil
        let moment = now()
        let lifetime: Duration = switch outcome {
        case .failure(let rejection) where rejection.kind != .retryable: limits.outcomeLifetime
        default: limits.unsettledLifetime
        }
        let bound = max(1, limits.maxRemembered)
        if remembered.count >= bound { remembered = remembered.filter { $0.value.until > moment } }
        // Still full: those nearest their end make room (a tenth at once, so a flood does not
        // pay a full scan per re-read).
        if remembered.count >= bound {
            for stale in remembered.sorted(by: { $0.value.until < $1.value.until }).prefix(max(1, bound / 10)) { remembered[stale.key] = nil }
        }
        remembered[key] = (outcome, moment.addingTimeInterval(Self.seconds(lifetime)))
    }

    /// Takes one re-read from `app`'s bucket: `perAppPerMinute` at most, refilled evenly.
    private func spend(_ app: String, at moment: Date) -> Bool {
        let capacity = Double(max(1, limits.perAppPerMinute))
        var bucket = budgets[app] ?? (capacity, moment)
        bucket.tokens = min(capacity, bucket.tokens + max(0, moment.timeIntervalSince(bucket.at)) * capacity / 60)
        bucket.at = moment
        guard bucket.tokens >= 1 else {
            budgets[app] = bucket
            return false
        }
        bucket.tokens -= 1
        budgets[app] = bucket
        return true
    }

    private static func seconds(_ duration: Duration) -> TimeInterval {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
