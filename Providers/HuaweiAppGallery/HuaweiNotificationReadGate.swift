package import Foundation
package import ReceiptCore

/// The re-reads of Huawei that notifications ask for, one gate per lane. An order notification is
/// unsigned, so anyone who knows an app id can make us ask Huawei about any token, spending the
/// app's Huawei quota and our threads; a subscription event is signed, so only Huawei makes new
/// ones. Each lane has a gate (and an HTTP client) of its own, so unsigned traffic never holds
/// what a signed notification needs. Within a gate:
/// - the outcome of a re-read is remembered by what it asked (`key`, which names what the
///   notification claims as well as the purchase), at most `maxRemembered` of them. Only an
///   outcome that settles its question answers from memory: an answer that backs the claim or
///   shows there is nothing to record (`settle`) and a final refusal for `outcomeLifetime`, a
///   failure for now (Huawei unreachable) for `unsettledLifetime`. An answer that does not back
///   the claim answers no one else: Huawei may change it at any moment (a refund not shown yet),
///   so the next notification claiming it, genuine or made up, is read again;
/// - a re-read already running for a key is awaited, not repeated;
/// - each app may have `atOnce` re-reads running and start a lane's allowance a minute (a token
///   bucket). Past either, the notification is refused at once as retryable (Huawei sends it again
///   later; the cancelled-purchases poll reconciles anyway) instead of queueing. Both bounds are
///   per app: one app's notifications never take what another's need.
package actor HuaweiNotificationReadGate {
    package typealias Outcome = Result<VerifiedPurchase?, NotificationRejection>

    /// Which notifications a gate serves, and so which allowance a minute it spends.
    package enum Lane: Sendable {
        /// Order notifications: `perAppPerMinute`.
        case unsigned
        /// Subscription events, whose signature was checked: `signedPerAppPerMinute`.
        case signed
    }

    private struct Remembered {
        let outcome: Outcome
        var until: Date
        /// Whether the outcome may answer a notification asking the same again.
        var answers: Bool
    }

    private let limits: HuaweiAppGalleryConfiguration.NotificationReads
    private let perMinute: Int
    private let now: @Sendable () -> Date
    private var remembered: [String: Remembered] = [:]
    private var reading: [String: Task<Outcome, Never>] = [:]
    /// Re-reads running, by app.
    private var running: [String: Int] = [:]
    private var budgets: [String: (tokens: Double, at: Date)] = [:]
    /// Re-reads started since the gate was made, and asks that waited for one already running
    /// (tests count them).
    package private(set) var started = 0
    package private(set) var joined = 0

    package init(
        limits: HuaweiAppGalleryConfiguration.NotificationReads, lane: Lane = .unsigned,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.limits = limits
        perMinute = lane == .signed ? limits.signedPerAppPerMinute : limits.perAppPerMinute
        self.now = now
    }

    /// The purchase `read` finds (nil: Huawei knows nothing for this client), from memory when the
    /// same key was read lately and settled. `app` is the Huawei app id whose bounds a new re-read
    /// counts against. Throws `NotificationRejection`: what the re-read threw, or retryable when
    /// the app has too many running or its allowance is spent.
    package func purchase(
        key: String, app: String,
        read: @escaping @Sendable () async -> Outcome
    ) async throws(NotificationRejection) -> VerifiedPurchase? {
        let moment = now()
        if let entry = remembered[key] {
            if entry.until <= moment {
                remembered[key] = nil
            } else if entry.answers {
                return try entry.outcome.get()
            }
        }
        let task: Task<Outcome, Never>
        if let inFlight = reading[key] {
            joined += 1
            task = inFlight
        } else {
            guard running[app, default: 0] < max(1, limits.atOnce) else {
                throw NotificationRejection(
                    .retryable, reason: "HUAWEI_READS_BUSY",
                    message: "too many of this app's notifications are being checked with Huawei now")
            }
            guard spend(app, at: moment) else {
                throw NotificationRejection(
                    .retryable, reason: "HUAWEI_READ_BUDGET_SPENT",
                    message: "this app's notifications have asked Huawei as often as they may for now")
            }
            started += 1
            running[app, default: 0] += 1
            // Not a child of the caller's task: a caller that gives up must not cancel the re-read
            // others wait for. The HTTP client's timeout bounds it.
            task = Task {
                let outcome = await read()
                self.finish(key, app: app, outcome)
                return outcome
            }
            reading[key] = task
        }
        return try await task.value.get()
    }

    /// The answer remembered for `key` settles its notification (it backs the claim, or shows
    /// there is nothing to record): it answers the same question for `outcomeLifetime` from now.
    package func settle(_ key: String) {
        guard var entry = remembered[key], case .success = entry.outcome else { return }
        entry.answers = true
        entry.until = now().addingTimeInterval(Self.seconds(limits.outcomeLifetime))
        remembered[key] = entry
    }

    /// Files the outcome of a re-read before anyone is given it. A refusal answers from memory
    /// (final ones long, failures for now briefly); an answer waits for `settle`, and until then
    /// answers no one but those already waiting for it.
    private func finish(_ key: String, app: String, _ outcome: Outcome) {
        reading[key] = nil
        running[app, default: 1] -= 1
        if (running[app] ?? 0) <= 0 { running[app] = nil }
        let moment = now()
        let lifetime: Duration =
            switch outcome {
            case .failure(let rejection) where rejection.kind != .retryable: limits.outcomeLifetime
            default: limits.unsettledLifetime
            }
        let bound = max(1, limits.maxRemembered)
        if remembered.count >= bound { remembered = remembered.filter { $0.value.until > moment } }
        // Still full: those nearest their end make room (a tenth at once, so a flood does not
        // pay a full scan per re-read).
        if remembered.count >= bound {
            for stale in remembered.sorted(by: { $0.value.until < $1.value.until }).prefix(max(1, bound / 10)) {
                remembered[stale.key] = nil
            }
        }
        let answers = if case .failure = outcome { true } else { false }
        remembered[key] = Remembered(
            outcome: outcome, until: moment.addingTimeInterval(Self.seconds(lifetime)), answers: answers)
    }

    /// Takes one re-read from `app`'s bucket: `perMinute` at most, refilled evenly.
    private func spend(_ app: String, at moment: Date) -> Bool {
        let capacity = Double(max(1, perMinute))
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
