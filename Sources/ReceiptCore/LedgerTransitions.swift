public import Foundation

/// What a store event does to the ledger, decided once and without a database: the news the
/// transaction's row is told, what happens to its subscription and its refund request, and, once
/// the writes report what actually moved, which events the game is owed. The service's
/// repository carries the moves out in SQL; the plugin tests' fake core carries them out in
/// memory; both ask this rule.
public struct LedgerTransition: Sendable, Equatable {
    /// What the transaction's row is told; nil leaves the row as it is (a renewal-status change,
    /// a refund request: the ledger does not create a row for those).
    public private(set) var transaction: LedgerNews?
    /// What happens to the subscription the transaction is a period of.
    public private(set) var subscription: SubscriptionMove?
    /// The outcome joined to the player's refund request, when there is one.
    public private(set) var refundOutcome: RefundOutcome?
    /// The store asks the developer about a refund: the request is recorded and answered.
    public private(set) var recordsRefundRequest: Bool
    /// The event can change what a player owns: the entitlement index follows in the same
    /// database transaction.
    public private(set) var movesEntitlements: Bool
    /// Whether the owed events depend on the transaction being the subscription's latest period
    /// (an earlier period's expiry told late moves that period's row, not the subscription).
    public private(set) var asksCurrentPeriod: Bool
    /// The game is owed news about the transaction's row as it stands, though the transition
    /// leaves it as it is (a dispute opened without revoking): the row is read.
    public private(set) var readsRow: Bool = false
    private var owes: Owed

    public enum SubscriptionMove: Sendable, Equatable {
        /// Refunded or revoked: withdrawn, whatever its period says.
        case withdraw(SubscriptionStatus)
        /// The store reversed a refund or revocation.
        case reinstate
        /// A new period, or the same period's end moved later; with auto-renew when the store told it.
        case extend(autoRenew: Bool?)
        /// Expired, in a grace period or in billing retry.
        case status(SubscriptionStatus, graceUntil: Date?)
        /// Auto-renew switched, which counts only for the current period.
        case autoRenewIfCurrent(Bool)
    }

    public enum RefundOutcome: String, Sendable, Equatable {
        case refunded, declined
    }

    enum Owed: Sendable, Equatable {
        case nothing
        /// A refund or revocation newly on record, or a different share refunded.
        case refundNews(webhook: String)
        /// The transaction's state moved.
        case stateChange(webhook: String)
        /// The state moved or the subscription gained time.
        case stateOrExtension(webhook: String)
        /// The subscription moved, or the transaction's state did while it is the current period.
        case currentChange(webhook: String)
        /// A refund request newly on record (its answer is the refund request ledger's business).
        case refundRequest
        /// A share refunded with the purchase kept, newly told: the webhook only.
        case partialRefundNews(webhook: String)
        /// Items of the purchase newly refunded, the purchase itself kept: the webhook only.
        case itemsRefundNews(webhook: String)
        /// A dispute newly on record (the notification is the store's once): its webhook carries the
        /// dispute, and a revocation it made owes the refund callback too.
        case dispute(webhook: String)
    }
}

/// What the writes of a transition actually did.
public struct LedgerOutcome: Sendable, Equatable {
    /// nil when the transition did not touch the transaction's row.
    public var transaction: TransactionChange?
    /// The subscription's status moved, or it gained time.
    public var subscriptionMoved: Bool
    /// The transaction is the subscription's latest period (or not a subscription's).
    public var isCurrentPeriod: Bool
    /// A refund request was newly recorded.
    public var refundRequestRecorded: Bool

    public init(
        transaction: TransactionChange? = nil, subscriptionMoved: Bool = false, isCurrentPeriod: Bool = true,
        refundRequestRecorded: Bool = false
    ) {
        self.transaction = transaction
        self.subscriptionMoved = subscriptionMoved
        self.isCurrentPeriod = isCurrentPeriod
        self.refundRequestRecorded = refundRequestRecorded
    }
}

/// A transaction's row before and after a store's news: events follow changes of state, never the
/// number of notifications that told of one.
public struct TransactionChange: Sendable, Equatable {
    /// The row is new, or its state moved.
    public var stateChanged: Bool
    /// The row is newly withdrawn, or the store now says a different share was refunded (of a
    /// withdrawn row, or of one kept after a partial refund).
    public var refundChanged: Bool
    /// The store now says other items of the purchase were refunded or taken back.
    public var itemsRefundedChanged: Bool

    public init(stateChanged: Bool, refundChanged: Bool, itemsRefundedChanged: Bool = false) {
        self.stateChanged = stateChanged
        self.refundChanged = refundChanged
        self.itemsRefundedChanged = itemsRefundedChanged
    }

    /// The change from `before` (nil: the row is new) to `after`.
    public init(before: TransactionRecord?, after: TransactionRecord) {
        let refundedItems = after.items.filter(\.isRefunded)
        guard let before else {
            self.init(
                stateChanged: true, refundChanged: after.state.isWithdrawn || after.refund != nil,
                itemsRefundedChanged: !refundedItems.isEmpty)
            return
        }
        let newlyWithdrawn = after.state.isWithdrawn && !before.state.isWithdrawn
        let toldAnotherShare = before.refund != after.refund && (after.state.isWithdrawn || after.refund != nil)
        self.init(
            stateChanged: before.state != after.state, refundChanged: newlyWithdrawn || toldAnotherShare,
            itemsRefundedChanged: before.items.filter(\.isRefunded) != refundedItems)
    }
}

/// What the game is owed once a transition's writes are done.
public struct LedgerConsequence: Sendable, Equatable {
    /// The ledger's state moved (what a caller reports as "changed").
    public var changed: Bool
    /// The webhook event to queue, when the game is owed one.
    public var webhook: String?
    /// The webhook carries the refund's detail beside the transaction.
    public var webhookCarriesRefund: Bool
    /// The game's refund callback is owed too (in its client's format).
    public var refundCallback: Bool
    /// The webhook carries the dispute beside the transaction.
    public var webhookCarriesDispute: Bool = false
    /// The webhook carries the refunded items beside the transaction.
    public var webhookCarriesItems: Bool = false

    static let nothing = LedgerConsequence(
        changed: false, webhook: nil, webhookCarriesRefund: false, refundCallback: false)
}

extension LedgerTransition {
    /// The transition `event` makes for `purchase` at `now` (a billing issue is a grace period only
    /// while the store's grace lasts; a dispute revokes at once only when `disputeRevokes`).
    public init(
        _ event: StoreEvent.Kind, purchase: VerifiedPurchase, autoRenew: Bool?, graceUntil: Date?,
        disputeRevokes: Bool = false, at now: Date
    ) {
        self.init(
            transaction: nil, subscription: nil, refundOutcome: nil, recordsRefundRequest: false,
            movesEntitlements: true, asksCurrentPeriod: false, owes: .nothing)
        switch event {
        case .refunded, .revoked:
            let state: TransactionState = event == .refunded ? .refunded : .revoked
            transaction = .storeEvent(state)
            subscription = .withdraw(SubscriptionStatus(state))
            refundOutcome = event == .refunded ? .refunded : nil
            owes = .refundNews(webhook: event == .refunded ? "transaction.refunded" : "transaction.revoked")
        case .partiallyRefunded:
            transaction = .partialRefund(LedgerRules.stateAfterReversal(of: purchase, at: now))
            refundOutcome = .refunded
            // The webhook tells the share; a refund callback would tell the game to take the
            // purchase back, which the buyer keeps.
            owes = .partialRefundNews(webhook: "transaction.refunded")
        case .refundReversed:
            transaction = .reversal(LedgerRules.stateAfterReversal(of: purchase, at: now))
            subscription = .reinstate
            owes = .stateChange(webhook: "transaction.refund_reversed")
        case .renewed, .subscribed:
            transaction = .storeEvent(LedgerRules.state(of: purchase, at: now))
            subscription = .extend(autoRenew: autoRenew)
            owes = .stateOrExtension(webhook: "subscription.renewed")
        case .expired, .gracePeriodExpired:
            transaction = .storeEvent(.expired)
            subscription = .status(.expired, graceUntil: nil)
            asksCurrentPeriod = true
            owes = .currentChange(webhook: "subscription.expired")
        case .billingIssue:
            let inGrace = (graceUntil ?? .distantPast) > now
            transaction = .storeEvent(LedgerRules.state(of: purchase, at: now))
            subscription = .status(inGrace ? .gracePeriod : .billingRetry, graceUntil: graceUntil)
            asksCurrentPeriod = true
            owes = .currentChange(webhook: "subscription.billing_issue")
        case .renewalStatusChanged:
            subscription = autoRenew.map { .autoRenewIfCurrent($0) }
            asksCurrentPeriod = autoRenew != nil
        case .consumptionRequest:
            // Known or not, the request is recorded and answered; the ledger's row is not created by it.
            recordsRefundRequest = true
            movesEntitlements = false
            owes = .refundRequest
        case .refundDeclined:
            refundOutcome = .declined
            movesEntitlements = false
        case .disputed:
            if disputeRevokes {
                transaction = .storeEvent(.revoked)
                subscription = .withdraw(.revoked)
            } else {
                movesEntitlements = false
                readsRow = true
            }
            owes = .dispute(webhook: "transaction.disputed")
        case .itemsRefunded:
            // The purchase stands; its items' refunds are written with it, and the entitlement
            // index withdraws what those items granted.
            transaction = .storeEvent(LedgerRules.state(of: purchase, at: now))
            owes = .itemsRefundNews(webhook: "transaction.items_refunded")
        case .purchased:
            // Written as the store says it stands; the claim owes the game its news, not the store's word.
            transaction = .storeEvent(LedgerRules.state(of: purchase, at: now))
        case .oneTimeCharge, .test, .other:
            movesEntitlements = false
        }
    }

    /// What the game is owed, given what the writes did.
    public func consequence(of outcome: LedgerOutcome) -> LedgerConsequence {
        let change = outcome.transaction ?? TransactionChange(stateChanged: false, refundChanged: false)
        let moved: Bool
        let webhook: String
        switch owes {
        case .nothing:
            return .nothing
        case .refundRequest:
            return LedgerConsequence(
                changed: outcome.refundRequestRecorded, webhook: nil, webhookCarriesRefund: false, refundCallback: false
            )
        case .refundNews(let name):
            guard change.refundChanged else { return .nothing }
            return LedgerConsequence(changed: true, webhook: name, webhookCarriesRefund: true, refundCallback: true)
        case .itemsRefundNews(let name):
            guard change.itemsRefundedChanged else { return .nothing }
            return LedgerConsequence(
                changed: true, webhook: name, webhookCarriesRefund: false, refundCallback: false,
                webhookCarriesItems: true)
        case .partialRefundNews(let name):
            guard change.refundChanged else { return .nothing }
            return LedgerConsequence(changed: true, webhook: name, webhookCarriesRefund: true, refundCallback: false)
        case .dispute(let name):
            return LedgerConsequence(
                changed: true, webhook: name, webhookCarriesRefund: false, refundCallback: change.refundChanged,
                webhookCarriesDispute: true)
        case .stateChange(let name):
            (moved, webhook) = (change.stateChanged, name)
        case .stateOrExtension(let name):
            (moved, webhook) = (change.stateChanged || outcome.subscriptionMoved, name)
        case .currentChange(let name):
            (moved, webhook) = (outcome.subscriptionMoved || (change.stateChanged && outcome.isCurrentPeriod), name)
        }
        return LedgerConsequence(
            changed: moved, webhook: moved ? webhook : nil, webhookCarriesRefund: false, refundCallback: false)
    }
}
