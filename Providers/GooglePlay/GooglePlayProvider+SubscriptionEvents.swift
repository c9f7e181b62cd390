import Foundation
import ReceiptCore

extension GooglePlayProvider {
    /// `subscriptionState` of `purchases.subscriptionsv2`, typed; a value Google adds later is kept raw.
    enum SubscriptionStateView: Equatable {
        case active, canceled, inGracePeriod, onHold, paused, expired, other(String)

        init(_ raw: String?) {
            switch raw {
            case "SUBSCRIPTION_STATE_ACTIVE"?: self = .active
            case "SUBSCRIPTION_STATE_CANCELED"?: self = .canceled
            case "SUBSCRIPTION_STATE_IN_GRACE_PERIOD"?: self = .inGracePeriod
            case "SUBSCRIPTION_STATE_ON_HOLD"?: self = .onHold
            case "SUBSCRIPTION_STATE_PAUSED"?: self = .paused
            case "SUBSCRIPTION_STATE_EXPIRED"?: self = .expired
            default: self = .other(raw ?? "")
            }
        }
    }

    /// What a pushed subscription notification changes. The push names a token and claims a
    /// change, and anyone who can reach the push endpoint (a leaked `?token=`, a misrouted topic)
    /// could claim any change of any token; so the token is read back from Google
    /// (`subscriptionsv2.get`) and the ledger changes only as that answer shows. A claim the answer
    /// does not bear out (a revocation of a subscription Google reads active, a renewal of one it
    /// reads expired, a token it does not know) is kept as `<type>_UNCONFIRMED` and changes
    /// nothing: answered 200, Pub/Sub has nothing to retry. Google's state is kept as the subtype.
    /// Google unreachable: a retryable rejection (503), so Pub/Sub sends it again.
    func pushedSubscriptionChange(
        _ pushed: DeveloperNotification.Subscription, type: String, token: String, package: String, eventTime: Date?,
        request: NotificationRequest
    ) async throws -> (id: String?, type: String, subtype: String?, event: StoreEvent) {
        var evidence = GooglePlayEvidence(purchaseToken: token)
        evidence.isSubscription = true
        let access = try await eventAccess(package: package, request: request)
        let purchase = try await fetchForEvent(evidence, package: package, access: access)
        let state = purchase?.storeAttributes["subscription_state"]
        guard let purchase,
            let event = Self.subscriptionEvent(
                pushed.notificationType ?? SubscriptionNotificationType(rawValue: 0), purchase: purchase)
        else {
            logger.warning(
                "a pushed Google Play subscription change that Google's answer does not show was kept, not applied",
                ["package": package, "notification.type": type, "google.state": state ?? "unknown token"])
            // The purchase stays on the row for support; `.other` changes nothing in the ledger.
            return (nil, "\(type)_UNCONFIRMED", state, StoreEvent(kind: .other, purchase: purchase))
        }
        guard pushed.notificationType == .revoked, let orderID = purchase.orderID else {
            return (nil, type, state, event)
        }
        // Google reads a revoked subscription as plainly expired: only the order (`orders.batchGet`)
        // or the list of voided purchases tells a revocation (a refund) from an expiry. Listed, it is the void itself, on the id the
        // voided-purchase push and the poll use, so the game server is owed one refund callback;
        // not listed, the expiry Google reads is what is applied.
        let confirmation: VoidConfirmation?
        do {
            confirmation = try await confirmVoid(
                token: token, orderID: orderID, fetched: purchase, package: package, hintedAt: eventTime,
                key: access.key)
        } catch let error as StoreAPIError {
            logger.warning(
                "a pushed Google Play revocation could not be checked", ["package": package, "problem": error.message])
            throw NotificationRejection(
                .retryable, reason: error.reason,
                message: "the revocation could not be checked with Google now")
        }
        let refunded: VerifiedPurchase
        switch confirmation {
        case .listed(let listed)?:
            refunded = try Self.voided(
                purchase, orderID: orderID, token: token, package: package,
                at: GoogleTime.millis(listed.voidedTimeMillis) ?? eventTime ?? now(), reasonCode: listed.voidedReason)
        case .order(let order)? where OrderState(order.state).isVoid:
            refunded = try Self.voided(
                purchase, orderID: orderID, token: token, package: package,
                at: Self.voidTime(of: order) ?? eventTime ?? now(), reasonCode: nil)
        default:
            return (nil, type, state, event)
        }
        return ("voided:\(orderID)", type, state, StoreEvent(kind: .refunded, purchase: refunded))
    }

    /// The ledger event a subscription notification of `type` may cause, given the subscription as
    /// Google reads it now; nil when Google's answer does not bear the notification out. Dates,
    /// order and auto-renewal always come from Google's answer, never from the push.
    static func subscriptionEvent(_ type: SubscriptionNotificationType, purchase: VerifiedPurchase) -> StoreEvent? {
        let state = SubscriptionStateView(purchase.storeAttributes["subscription_state"])
        let autoRenew = purchase.storeAttributes["auto_renew"].map { $0 == "true" }
        switch type {
        case .recovered, .renewed, .purchased, .deferred:
            // a paid period, paid for as Google reads it now (canceled runs to its end); a deferral
            // moves its end later at no charge, which the ledger takes as it takes a renewal
            guard state == .active || state == .canceled else { return nil }
            return StoreEvent(
                kind: type == .purchased ? .subscribed : .renewed, purchase: purchase, autoRenew: autoRenew)
        case .canceled, .restarted:  // auto-renewal off or on, if Google reads it so
            guard let autoRenew, autoRenew == (type == .restarted) else { return nil }
            return StoreEvent(kind: .renewalStatusChanged, purchase: purchase, autoRenew: autoRenew)
        case .onHold, .inGracePeriod:  // no access, or access until expiry: whichever Google reads
            switch state {
            case .onHold: return StoreEvent(kind: .billingIssue, purchase: purchase, autoRenew: autoRenew)
            case .inGracePeriod:
                return StoreEvent(
                    kind: .billingIssue, purchase: purchase, autoRenew: autoRenew,
                    gracePeriodExpires: purchase.expiresDate)
            default: return nil
            }
        case .paused, .expired:  // access has ended
            guard state == .paused || state == .expired else { return nil }
            return StoreEvent(kind: .expired, purchase: purchase, autoRenew: autoRenew)
        case .revoked:  // Google reads a revoked subscription expired at once (a refund is for the caller to confirm)
            guard state == .expired else { return nil }
            return StoreEvent(kind: .expired, purchase: purchase, autoRenew: autoRenew)
        default:  // price changes, pause schedules...: news, no ledger change
            return StoreEvent(kind: .other, purchase: purchase, autoRenew: autoRenew)
        }
    }
}
