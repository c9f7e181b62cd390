import Foundation
import ReceiptCore
import Testing

/// What a store event does to the ledger and what the game is told of it, without a database:
/// the rule the service's repository and the plugin tests' fake core both carry out.
@Suite struct LedgerTransitionRule {
    static let now = Date(timeIntervalSince1970: 1_780_000_000)

    static func purchase(expires: TimeInterval? = 3600, revoked: Bool = false) -> VerifiedPurchase {
        var purchase = VerifiedPurchase(
            store: StoreID(rawValue: "app_store"), environment: .production, transactionID: "2000000000000002")
        purchase.originalTransactionID = "2000000000000001"
        purchase.expiresDate = expires.map { now.addingTimeInterval($0) }
        if revoked {
            purchase.revocationDate = now.addingTimeInterval(-60)
            purchase.revocationReason = "refunded_due_to_issue"
        }
        return purchase
    }

    static func transition(
        _ kind: StoreEvent.Kind, _ purchase: VerifiedPurchase = purchase(), autoRenew: Bool? = nil,
        graceUntil: Date? = nil
    ) -> LedgerTransition {
        LedgerTransition(kind, purchase: purchase, autoRenew: autoRenew, graceUntil: graceUntil, at: now)
    }

    static let moved = TransactionChange(stateChanged: true, refundChanged: false)
    static let still = TransactionChange(stateChanged: false, refundChanged: false)

    @Test func aRefundWithdrawsTheTransactionAndItsSubscriptionAndIsToldOnce() {
        let refund = Self.transition(.refunded, Self.purchase(revoked: true))
        #expect(refund.transaction == .storeEvent(.refunded))
        #expect(refund.subscription == .withdraw(.refunded))
        #expect(refund.refundOutcome == .refunded)
        #expect(refund.movesEntitlements)

        let first = refund.consequence(
            of: LedgerOutcome(transaction: TransactionChange(stateChanged: true, refundChanged: true)))
        #expect(first.webhook == "transaction.refunded")
        #expect(first.webhookCarriesRefund && first.refundCallback && first.changed)
        // The same refund told again (a new notification id, a poll) owes nothing.
        #expect(refund.consequence(of: LedgerOutcome(transaction: Self.still)).webhook == nil)
        #expect(!refund.consequence(of: LedgerOutcome(transaction: Self.still)).changed)
    }

    @Test func aDisputeIsToldWithItsDetailAndRevokesOnlyWhenItSaysSo() {
        let told = LedgerTransition(
            .disputed, purchase: Self.purchase(), autoRenew: nil, graceUntil: nil, disputeRevokes: false, at: Self.now)
        #expect(told.transaction == nil && told.subscription == nil)
        #expect(told.readsRow, "the webhook is about the row as it stands")
        #expect(!told.movesEntitlements)
        let owed = told.consequence(of: LedgerOutcome())
        #expect(owed.webhook == "transaction.disputed" && owed.webhookCarriesDispute)
        #expect(!owed.refundCallback, "nothing was taken back")

        let revoking = LedgerTransition(
            .disputed, purchase: Self.purchase(), autoRenew: nil, graceUntil: nil, disputeRevokes: true, at: Self.now)
        #expect(revoking.transaction == .storeEvent(.revoked))
        #expect(revoking.subscription == .withdraw(.revoked))
        #expect(revoking.movesEntitlements && !revoking.readsRow)
        let revoked = revoking.consequence(
            of: LedgerOutcome(transaction: TransactionChange(stateChanged: true, refundChanged: true)))
        #expect(revoked.webhook == "transaction.disputed" && revoked.webhookCarriesDispute && revoked.refundCallback)
    }

    @Test func aPartialRefundKeepsThePurchaseAndIsToldWithItsShare() {
        var purchase = Self.purchase()
        purchase.refund = RefundDetail(storeSaysPartial: true, percentageMilliunits: 25_000)
        let partial = Self.transition(.partiallyRefunded, purchase)
        #expect(partial.transaction == .partialRefund(.active))
        #expect(partial.subscription == nil, "the subscription is not withdrawn")
        for recorded in TransactionState.allCases {
            #expect(LedgerRules.state(of: recorded, after: partial.transaction!) == recorded, "kept \(recorded)")
        }
        let told = partial.consequence(
            of: LedgerOutcome(transaction: TransactionChange(stateChanged: false, refundChanged: true)))
        #expect(told.webhook == "transaction.refunded" && told.webhookCarriesRefund)
        #expect(!told.refundCallback, "no callback tells the game to take back what the buyer keeps")
        #expect(partial.consequence(of: LedgerOutcome(transaction: Self.still)).webhook == nil, "the same share again")

        var before = TransactionRecord(
            recording: Self.purchase(), managementID: 1, state: .active, clientID: "c", gameID: nil,
            firstVerifiedAt: Self.now)
        var after = before
        after.refund = purchase.refund
        #expect(TransactionChange(before: before, after: after) == .init(stateChanged: false, refundChanged: true))
        before.refund = purchase.refund
        #expect(TransactionChange(before: before, after: after) == Self.still)
    }

    @Test func aRevocationIsNotARefund() {
        let revocation = Self.transition(.revoked)
        #expect(revocation.transaction == .storeEvent(.revoked))
        #expect(revocation.subscription == .withdraw(.revoked))
        #expect(revocation.refundOutcome == nil)
        let told = revocation.consequence(
            of: LedgerOutcome(transaction: TransactionChange(stateChanged: true, refundChanged: true)))
        #expect(told.webhook == "transaction.revoked")
    }

    @Test func aReversalReinstatesWhatTheDatesSay() {
        #expect(Self.transition(.refundReversed).transaction == .reversal(.active))
        #expect(Self.transition(.refundReversed, Self.purchase(expires: -60)).transaction == .reversal(.expired))
        #expect(Self.transition(.refundReversed).subscription == .reinstate)
        let told = Self.transition(.refundReversed).consequence(of: LedgerOutcome(transaction: Self.moved))
        #expect(told.webhook == "transaction.refund_reversed")
        #expect(Self.transition(.refundReversed).consequence(of: LedgerOutcome(transaction: Self.still)).webhook == nil)
    }

    @Test func aRenewalIsToldWhenTheSubscriptionGainsTimeEvenIfTheRowDidNotMove() {
        let renewal = Self.transition(.renewed, autoRenew: false)
        #expect(renewal.subscription == .extend(autoRenew: false))
        #expect(renewal.transaction == .storeEvent(.active))
        let extended = renewal.consequence(of: LedgerOutcome(transaction: Self.still, subscriptionMoved: true))
        #expect(extended.webhook == "subscription.renewed")
        #expect(renewal.consequence(of: LedgerOutcome(transaction: Self.still)).webhook == nil)
    }

    @Test func anEarlierPeriodsExpiryToldLateMovesOnlyThatPeriod() {
        let expiry = Self.transition(.expired)
        #expect(expiry.asksCurrentPeriod)
        #expect(expiry.subscription == .status(.expired, graceUntil: nil))
        let late = expiry.consequence(of: LedgerOutcome(transaction: Self.moved, isCurrentPeriod: false))
        #expect(late.webhook == nil && !late.changed)
        let current = expiry.consequence(of: LedgerOutcome(transaction: Self.moved, isCurrentPeriod: true))
        #expect(current.webhook == "subscription.expired")
        let subscriptionOnly = expiry.consequence(
            of: LedgerOutcome(transaction: Self.still, subscriptionMoved: true, isCurrentPeriod: false))
        #expect(subscriptionOnly.webhook == "subscription.expired")
    }

    @Test func aBillingIssueIsAGracePeriodOnlyWhileTheGraceLasts() {
        let inGrace = Self.transition(.billingIssue, graceUntil: Self.now.addingTimeInterval(60))
        #expect(inGrace.subscription == .status(.gracePeriod, graceUntil: Self.now.addingTimeInterval(60)))
        let graceOver = Self.transition(.billingIssue, graceUntil: Self.now.addingTimeInterval(-1))
        #expect(graceOver.subscription == .status(.billingRetry, graceUntil: Self.now.addingTimeInterval(-1)))
        #expect(Self.transition(.billingIssue).subscription == .status(.billingRetry, graceUntil: nil))
        let told = inGrace.consequence(of: LedgerOutcome(transaction: Self.still, subscriptionMoved: true))
        #expect(told.webhook == "subscription.billing_issue")
    }

    @Test func eventsThatDoNotMoveTheLedgerOweNothing() {
        let switched = Self.transition(.renewalStatusChanged, autoRenew: false)
        #expect(switched.subscription == .autoRenewIfCurrent(false))
        #expect(switched.transaction == nil)
        #expect(switched.consequence(of: LedgerOutcome(subscriptionMoved: true)).webhook == nil)
        #expect(Self.transition(.renewalStatusChanged).subscription == nil)

        let declined = Self.transition(.refundDeclined)
        #expect(declined.refundOutcome == .declined && declined.transaction == nil && !declined.movesEntitlements)

        for kind in [StoreEvent.Kind.oneTimeCharge, .test, .other] {
            let nothing = Self.transition(kind)
            #expect(nothing.transaction == nil && nothing.subscription == nil && !nothing.movesEntitlements)
            #expect(nothing.consequence(of: LedgerOutcome(transaction: Self.moved)) == nothing.consequence(of: .init()))
            #expect(!nothing.consequence(of: LedgerOutcome(transaction: Self.moved)).changed)
        }
    }

    @Test func aRefundRequestIsRecordedNotWrittenIntoTheRow() {
        let request = Self.transition(.consumptionRequest)
        #expect(request.recordsRefundRequest && request.transaction == nil && !request.movesEntitlements)
        #expect(request.consequence(of: LedgerOutcome(refundRequestRecorded: true)).changed)
        #expect(request.consequence(of: LedgerOutcome(refundRequestRecorded: true)).webhook == nil)
        #expect(!request.consequence(of: LedgerOutcome()).changed)
    }

    @Test func aRowsChangeIsItsStateOrADifferentShareRefunded() {
        var before = TransactionRecord(
            managementID: 1, store: StoreID(rawValue: "app_store"), environment: .production,
            transactionID: "2000000000000002", state: .active, clientID: "rgc_a", firstVerifiedAt: Self.now)
        #expect(TransactionChange(before: nil, after: before) == Self.moved)
        var after = before
        after.state = .refunded
        #expect(TransactionChange(before: before, after: after) == .init(stateChanged: true, refundChanged: true))
        before = after
        after.refund = RefundDetail(percentageMilliunits: 50_000)
        #expect(TransactionChange(before: before, after: after) == .init(stateChanged: false, refundChanged: true))
        #expect(TransactionChange(before: after, after: after) == Self.still)
    }
}
