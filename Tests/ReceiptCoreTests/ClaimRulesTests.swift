import Foundation
import ReceiptCore
import Testing

/// The claim rule every path calls (the ledger's statements, the group commit's SQL, the plugin
/// tests' fake core): known is not claimed, a repeat is a duplicate, another player is a conflict.
@Suite struct ClaimRules {
    static let alice = Claimant(playerID: "alice", characterID: "c1", serverID: "s1", gameVersion: "1.0")

    @Test func aPurchaseNobodyClaimedIsClaimedFirstByWhoeverAsks() {
        #expect(LedgerRules.claim(of: nil, by: Claimant()) == .first)
        #expect(LedgerRules.claim(of: nil, by: Self.alice) == .first)
    }

    @Test func aLaterClaimIsARepeatUnlessMadeForAnotherPlayer() {
        let recorded = Claim(claimant: Self.alice, claimedAt: Date())
        #expect(LedgerRules.claim(of: recorded, by: Claimant(playerID: "alice")) == .repeated)
        #expect(
            LedgerRules.claim(of: recorded, by: Claimant()) == .repeated,
            "a claim naming no player cannot contradict one")
        #expect(LedgerRules.claim(of: recorded, by: Claimant(playerID: "bob")) == .conflict(firstClaimedBy: Self.alice))
        let anonymous = Claim(claimant: Claimant(), claimedAt: Date())
        #expect(LedgerRules.claim(of: anonymous, by: Claimant(playerID: "bob")) == .repeated)
    }

    /// A subscription's periods are its owner's: decided against the owner, not the period's own row.
    @Test func aPeriodIsDecidedAgainstTheSubscriptionsOwner() {
        let owner = Claim(claimant: Self.alice, claimedAt: Date())
        let bob = Claimant(playerID: "bob")
        #expect(
            LedgerRules.claim(of: nil, owner: owner, by: Claimant(playerID: "alice")) == .first,
            "the owner takes a period nobody claimed")
        #expect(LedgerRules.claim(of: nil, owner: owner, by: bob) == .conflict(firstClaimedBy: Self.alice))
        let bobsOldClaim = Claim(claimant: bob, claimedAt: Date())
        #expect(
            LedgerRules.claim(of: bobsOldClaim, owner: owner, by: Claimant(playerID: "alice")) == .repeated,
            "the owner is never the conflict")
        #expect(LedgerRules.mayTakePeriod(ownedBy: owner, by: Claimant(playerID: "alice")))
        #expect(!LedgerRules.mayTakePeriod(ownedBy: owner, by: bob))
        #expect(
            !LedgerRules.mayTakePeriod(ownedBy: owner, by: Claimant()),
            "a claim naming nobody takes nothing from an owner")
        #expect(LedgerRules.mayTakePeriod(ownedBy: nil, by: bob))
        #expect(LedgerRules.mayTakePeriod(ownedBy: Claim(claimant: Claimant(), claimedAt: Date()), by: bob))
        #expect(!LedgerRules.mayTakePeriod(ownedBy: owner, by: Claimant(playerID: "alic\u{E9}")))
    }

    @Test func aPurchaseThatExpiresIsAPeriod() {
        var purchase = PurchaseChoice.purchase("a", original: "a", product: "gems", daysAgo: 1)
        purchase.kind = .consumable
        #expect(!LedgerRules.isSubscriptionPeriod(purchase))
        purchase.kind = nil
        purchase.expiresDate = Date(timeIntervalSinceNow: 86_400)
        #expect(LedgerRules.isSubscriptionPeriod(purchase), "a StoreKit 1 receipt's entry has no kind, only an expiry")
    }

    @Test func severalPurchasesOfOneProductAreClaimedOldestFirst() {
        var purchases: [VerifiedPurchase] = []
        for (id, daysAgo) in [("b", 2.0), ("c", 1.0), ("a", 3.0)] {
            var purchase = PurchaseChoice.purchase(id, original: id, product: "gems", daysAgo: daysAgo)
            purchase.kind = .consumable
            purchases.append(purchase)
        }
        purchases.append(PurchaseChoice.purchase("z", original: "z", product: "other", daysAgo: 5))
        #expect(
            VerifiedPurchase.claimOrder(from: purchases, productID: "gems", transactionID: nil).map(\.transactionID)
                == ["a", "b", "c"])
        #expect(
            VerifiedPurchase.claimOrder(from: purchases, productID: "gems", transactionID: "b").isEmpty,
            "a named transaction is the one")
        #expect(VerifiedPurchase.claimOrder(from: purchases, productID: nil, transactionID: nil).isEmpty)
        #expect(
            VerifiedPurchase.claimOrder(from: purchases, productID: "other", transactionID: nil).isEmpty,
            "one purchase needs no order")
    }

    @Test func subscriptionPeriodsAreNotClaimedOneByOne() {
        let periods = PurchaseChoice.receipt.filter { $0.productID == "sub" }.map { period -> VerifiedPurchase in
            var period = period
            period.expiresDate = Date(timeIntervalSinceNow: 86_400)
            return period
        }
        #expect(VerifiedPurchase.claimOrder(from: periods, productID: "sub", transactionID: nil).isEmpty)
    }

    @Test func aRefundIsPartialWhenTheStoreSaysSoOrGaveBackLessThanAll() {
        #expect(!RefundDetail().isPartial(ofQuantity: 1))
        #expect(RefundDetail(storeSaysPartial: true).isPartial(ofQuantity: nil))
        #expect(RefundDetail(percentageMilliunits: 50_000).isPartial(ofQuantity: nil))
        #expect(!RefundDetail(percentageMilliunits: 100_000).isPartial(ofQuantity: nil))
        #expect(RefundDetail(quantity: 2).isPartial(ofQuantity: 5))
        #expect(!RefundDetail(quantity: 5).isPartial(ofQuantity: 5))
        #expect(!RefundDetail(storeSaysPartial: false, quantity: 1).isPartial(ofQuantity: nil))
    }
}
