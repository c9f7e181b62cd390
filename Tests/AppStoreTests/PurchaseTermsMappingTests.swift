import AppStoreTestSupport
import Foundation
import ReceiptCore
import Testing

@testable import AppStore

/// What a verified transaction's offer, items and billing plan become in store-neutral terms, and
/// which ledger event a refund of some items is.
@Suite struct PurchaseTermsMapping {
    static func decoded(_ overrides: [String: any Sendable]) throws -> JWSTransactionDecodedPayload {
        try JWSTransactionDecodedPayload(
            jsonPayload: JSONSerialization.data(withJSONObject: AppleTestPKI.transaction(overrides)))
    }

    @Test func offersAreNamedAndUnknownValuesKeptAsSent() throws {
        let code = try AppStoreProvider.purchase(
            from: Self.decoded(["offerType": 3, "offerIdentifier": "SPRING", "offerDiscountType": "ONE_TIME"]))
        #expect(code.offer == PurchaseOffer(type: "offer_code", identifier: "SPRING", discountType: "ONE_TIME"))
        let later = try AppStoreProvider.purchase(
            from: Self.decoded(["offerType": 99, "offerDiscountType": "SOMETHING_NEW", "offerPeriod": "P2W"]))
        #expect(later.offer == PurchaseOffer(type: "99", discountType: "SOMETHING_NEW", period: "P2W"))
        #expect(try AppStoreProvider.purchase(from: Self.decoded([:])).offer == nil)
    }

    @Test func itemsAndTheCommitmentAreKept() throws {
        let purchase = try AppStoreProvider.purchase(
            from: Self.decoded([
                "advancedCommerceInfo": [
                    "items": [
                        [
                            "SKU": "a", "price": 100,
                            "refunds": [["refundType": "LATER", "refundAmount": 50] as [String: any Sendable]]
                                as [any Sendable],
                        ] as [String: any Sendable],
                        ["displayName": "no SKU: maps to nothing"] as [String: any Sendable],
                    ] as [any Sendable]
                ] as [String: any Sendable],
                "billingPlanType": "QUARTERLY",
                "commitmentInfo": ["billingPeriodNumber": 2, "commitmentExpiresDate": 1_800_000_000_000]
                    as [String: any Sendable],
            ]))
        #expect(
            purchase.items == [
                PurchaseItem(sku: "a", priceMilliunits: 100, refunds: [ItemRefund(amountMilliunits: 50, type: "LATER")])
            ])
        #expect(purchase.commitment?.billingPlanType == "QUARTERLY", "a plan Apple adds later is kept as sent")
        #expect(purchase.commitment?.billingPeriodNumber == 2)
        #expect(purchase.commitment?.expiresDate == Date(timeIntervalSince1970: 1_800_000_000))
    }

    @Test func aRefundOfSomeItemsIsNotARefundOfThePurchase() throws {
        let items: [String: any Sendable] = [
            "advancedCommerceInfo": [
                "items": [["SKU": "a", "revocationDate": 1_790_000_000_000] as [String: any Sendable]] as [any Sendable]
            ] as [String: any Sendable]
        ]
        let someItems = try AppStoreProvider.purchase(from: Self.decoded(items))
        #expect(AppStoreProvider.eventKind(.refund, subtype: nil, purchase: someItems) == .itemsRefunded)
        #expect(AppStoreProvider.eventKind(.revoke, subtype: nil, purchase: someItems) == .itemsRefunded)
        var whole = items
        whole["revocationDate"] = Int64(1_790_000_000_000)
        let all = try AppStoreProvider.purchase(from: Self.decoded(whole))
        #expect(AppStoreProvider.eventKind(.refund, subtype: nil, purchase: all) == .refunded)
        let plain = try AppStoreProvider.purchase(from: Self.decoded([:]))
        #expect(AppStoreProvider.eventKind(.refund, subtype: nil, purchase: plain) == .refunded)
        #expect(AppStoreProvider.eventKind(.oneTimeCharge, subtype: nil, purchase: plain) == .purchased)
    }

    @Test func aWrongTypeInANestedObjectIsRefusedNamingTheField() throws {
        #expect(throws: (any Error).self) {
            try Self.decoded(["commitmentInfo": ["billingPeriodNumber": "two"] as [String: any Sendable]])
        }
        do {
            _ = try Self.decoded(["advancedCommerceInfo": ["items": "none"] as [String: any Sendable]])
            Issue.record("a string where items are is refused")
        } catch {
            #expect("\(error)".contains("advancedCommerceInfo") && "\(error)".contains("items"), "\(error)")
        }
    }
}
