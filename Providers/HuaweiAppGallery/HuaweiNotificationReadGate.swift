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

    private let limits: HuaweiAppGalleryConfiguration.NotificationReads
    private let perMinute: Int
    private let now: @Sendable () -> Date
    /// Outcomes by key, each read once for every ask waiting on it. An outcome is kept usable for
    /// as long as it may answer (a refusal) or for no time at all (an answer, until `settle`).
    private let outcomes: ExpiringCache<String, Outcome>
    /// Re-reads running, by app.
    private var running: [String: Int] = [:]
    private var budgets: [String: (tokens: Double, at: Date)] = [:]
    /// Re-reads started since the gate was made, and asks that waited for one already running
    /// (tests count them).
    package private(set) var started = 0
    package var joined: Int { get async { await outcomes.joins } }

    package init(
        limits: HuaweiAppGalleryConfiguration.NotificationReads, lane: Lane = .unsigned,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.limits = limits
        perMinute = lane == .signed ? limits.signedPerAppPerMinute : limits.perAppPerMinute
        self.now = now
        outcomes = ExpiringCache(now: now, maxEntries: max(1, limits.maxRemembered))
    }

    /// The purchase `read` finds (nil: Huawei knows nothing for this client), from memory when the
    /// same key was read lately and settled. `app` is the Huawei app id whose bounds a new re-read
    /// counts against. Throws `NotificationRejection`: what the re-read threw, or retryable when
    /// the app has too many running or its allowance is spent.
    package func purchase(
        key: String, app: String,
        read: @escaping @Sendable () async -> Outcome
    ) async throws(NotificationRejection) -> VerifiedPurchase? {
        let outcome: Outcome
        do {
            // The fetch is not a child of the caller's task: a caller that gives up does not cancel
            // the re-read others wait for. The HTTP client's timeout bounds it.
            outcome = try await outcomes.value(for: key) { [self] in
                try await admit(app)
                let outcome = await read()
                return (outcome, await finish(app: app, outcome))
            }
        } catch let rejection as NotificationRejection {
            throw rejection
        } catch {
            throw NotificationRejection(
                .retryable, reason: "HUAWEI_UNAVAILABLE", message: "the purchase could not be read from Huawei now")
        }
        return try outcome.get()
    }

    /// The answer remembered for `key` settles its notification (it backs the claim, or shows
    /// there is nothing to record): it answers the same question for `outcomeLifetime` from now.
    package func settle(_ key: String) async {
        await outcomes.keep(key, until: now().addingTimeInterval(Self.seconds(limits.outcomeLifetime))) { outcome in
            if case .success = outcome { true } else { false }
        }
    }

    /// Lets a re-read of `app` start, within its bounds: at most `atOnce` running, and its
    /// allowance a minute. A refusal is not remembered: the next ask may find room.
    private func admit(_ app: String) throws(NotificationRejection) {
        guard running[app, default: 0] < max(1, limits.atOnce) else {
            throw NotificationRejection(
                .retryable, reason: "HUAWEI_READS_BUSY",
                message: "too many of this app's notifications are being checked with Huawei now")
        }
        guard spend(app, at: now()) else {
            throw NotificationRejection(
                .retryable, reason: "HUAWEI_READ_BUDGET_SPENT",
                message: "this app's notifications have asked Huawei as often as they may for now")
        }
        started += 1
        running[app, default: 0] += 1
    }

    /// Ends a re-read of `app` and says until when its outcome answers: a final refusal for
    /// `outcomeLifetime`, a failure for now (Huawei unreachable) for `unsettledLifetime`, an answer
    /// not at all (it answers those already waiting, and later asks once `settle` vouches for it).
    private func finish(app: String, _ outcome: Outcome) -> Date {
        running[app, default: 1] -= 1
        if (running[app] ?? 0) <= 0 { running[app] = nil }
        let moment = now()
        return switch outcome {
        case .failure(let rejection) where rejection.kind != .retryable:
            moment.addingTimeInterval(Self.seconds(limits.outcomeLifetime))
        case .failure: moment.addingTimeInterval(Self.seconds(limits.unsettledLifetime))
        case .success: moment
        }
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
