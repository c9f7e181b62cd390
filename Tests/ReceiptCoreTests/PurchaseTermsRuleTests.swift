import Foundation
import ReceiptCore
import Testing

/// The ledger's rules for what a purchase was bought under: a one-time purchase a store tells of
/// is recorded before its claim, a refund of some items keeps the purchase and tells those items,
/// and a commitment renews until it ends whatever auto-renew says meanwhile.
@Suite struct PurchaseTermsRules {
    static let now = Date(timeIntervalSince1970: 1_780_000_000)

    static func purchase(items: [PurchaseItem] = []) -> VerifiedPurchase {
        var purchase = VerifiedPurchase(
            store: StoreID(rawValue: "app_store"), environment: .production, transactionID: "2000000000000003")
        purchase.kind = .consumable
        purchase.items = items
        return purchase
    }

    @Test func aPurchaseTheStoreTellsOfIsWrittenAsItStandsAndOwesTheGameNothingYet() {
        let told = LedgerTransition(
            .purchased, purchase: Self.purchase(), autoRenew: nil, graceUntil: nil, at: Self.now)
        #expect(told.transaction == .storeEvent(.active))
        #expect(told.subscription == nil)
        let owed = told.consequence(of: LedgerOutcome(transaction: TransactionChange(before: nil, after: Self.row())))
        #expect(owed.webhook == nil && !owed.refundCallback, "the claim owes the game its news, not the store's word")
    }

    static func row(items: [PurchaseItem] = []) -> TransactionRecord {
        TransactionRecord(
            recording: purchase(items: items), managementID: 1, state: .active, clientID: "c", gameID: nil,
            firstVerifiedAt: now)
    }

    @Test func itemsRefundedAreToldOnceAndOnlyWhenOtherItemsAreRefunded() {
        let kept = PurchaseItem(sku: "sword.ice")
        let refunded = PurchaseItem(sku: "sword.fire", refunds: [ItemRefund(amountMilliunits: 1990, type: "FULL")])
        let before = Self.row(items: [PurchaseItem(sku: "sword.fire"), kept])
        let after = Self.row(items: [refunded, kept])
        let change = TransactionChange(before: before, after: after)
        #expect(change == TransactionChange(stateChanged: false, refundChanged: false, itemsRefundedChanged: true))
        #expect(TransactionChange(before: after, after: after).itemsRefundedChanged == false)

        let transition = LedgerTransition(
            .itemsRefunded, purchase: Self.purchase(items: [refunded, kept]), autoRenew: nil, graceUntil: nil,
            at: Self.now)
        #expect(transition.transaction == .storeEvent(.active), "the purchase itself stands")
        #expect(transition.movesEntitlements, "the refunded items' grants are withdrawn")
        let owed = transition.consequence(of: LedgerOutcome(transaction: change))
        #expect(owed.webhook == "transaction.items_refunded" && owed.webhookCarriesItems && !owed.refundCallback)
        let again = transition.consequence(
            of: LedgerOutcome(transaction: TransactionChange(before: after, after: after)))
        #expect(again.webhook == nil && !again.changed)
    }

    @Test func aCommitmentRenewsUntilItEndsWhateverAutoRenewSays() {
        let periodEnd = Self.now.addingTimeInterval(20 * 86_400)
        var commitment = BillingCommitment(
            billingPlanType: "MONTHLY", billingPeriodNumber: 3, totalBillingPeriods: 12,
            expiresDate: Self.now.addingTimeInterval(270 * 86_400))
        #expect(EntitlementRules.willRenew(autoRenew: false, commitment: commitment, periodEnd: periodEnd) == true)
        #expect(EntitlementRules.willRenew(autoRenew: nil, commitment: commitment, periodEnd: periodEnd) == true)
        // The last payment's period: the customer's choice counts again.
        commitment.expiresDate = periodEnd
        #expect(EntitlementRules.willRenew(autoRenew: false, commitment: commitment, periodEnd: periodEnd) == false)
        #expect(EntitlementRules.willRenew(autoRenew: true, commitment: commitment, periodEnd: periodEnd) == true)
        #expect(EntitlementRules.willRenew(autoRenew: false, commitment: nil, periodEnd: periodEnd) == false)
        #expect(EntitlementRules.willRenew(autoRenew: nil, commitment: nil, periodEnd: periodEnd) == nil)
    }

    @Test func termsKeepTheirShapeThroughJSON() throws {
        let item = PurchaseItem(
            sku: "sword.fire", displayName: "Fire", priceMilliunits: 1990,
            revocationDate: Date(timeIntervalSince1970: 1_780_000_000.123),
            refunds: [
                ItemRefund(amountMilliunits: 1990, date: Date(timeIntervalSince1970: 1_780_000_000), reason: "LEGAL")
            ])
        let decoded = try JSONDecoder().decode(PurchaseItem.self, from: JSONEncoder().encode(item))
        #expect(decoded == item)
        let commitment = BillingCommitment(
            billingPlanType: "MONTHLY", expiresDate: Date(timeIntervalSince1970: 1_790_000_000))
        #expect(try JSONDecoder().decode(BillingCommitment.self, from: JSONEncoder().encode(commitment)) == commitment)
    }
}
