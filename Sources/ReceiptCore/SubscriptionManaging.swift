public import Foundation

/// A change the operator may ask a store to make to a subscription (the admin API, the console).
public enum SubscriptionChange: Sendable, Equatable {
    /// Access ends now and the buyer gets money back: all of the current period's, or the unused part.
    case revoke(refund: RevocationRefund)
    /// Renewals stop; access runs to the end of the period paid for.
    case cancel
    /// The next renewal moves `days` later, at no charge to the buyer.
    case deferRenewal(days: Int)

    /// The operator's audit name of the change.
    public var auditAction: String {
        switch self {
        case .revoke: "subscription-revoke"
        case .cancel: "subscription-cancel"
        case .deferRenewal: "subscription-defer"
        }
    }

    /// How far a renewal may be deferred at once.
    public static let deferralDays = 1...365
}

/// How much a revocation gives back.
public enum RevocationRefund: String, Sendable, CaseIterable {
    case full, prorated
}

/// A store whose subscriptions the operator may revoke, cancel or defer from the service. The
/// ledger does not move on the asking: the store's own notifications and read-backs say what
/// changed, as they do for a change made anywhere else.
public protocol SubscriptionManaging: Sendable {
    /// Asks the store to make `change` to `subscription` of `owner`'s app; the subscription's new
    /// end when the store answers with one (a deferral). Throws `StoreVerificationError` when the
    /// store refuses or cannot be asked.
    func change(
        _ change: SubscriptionChange, of subscription: QuietSubscription, owner: ClientWithStoreCredentials
    ) async throws -> Date?
}
