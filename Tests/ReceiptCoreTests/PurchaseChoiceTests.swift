import Foundation
import ReceiptCore
import Testing

/// Which purchase of many-purchase evidence (a StoreKit 1 receipt) a request means.
@Suite struct PurchaseChoice {
    static func purchase(_ id: String, original: String, product: String, daysAgo: Double) -> VerifiedPurchase {
        var purchase = VerifiedPurchase(store: StoreID(rawValue: "app_store"), environment: .sandbox, transactionID: id)
        purchase.originalTransactionID = original
        purchase.productID = product
        purchase.purchaseDate = Date(timeIntervalSinceNow: -daysAgo * 86_400)
        return purchase
    }

    static let receipt = [
        purchase("1", original: "1", product: "sub", daysAgo: 60),
        purchase("2", original: "1", product: "sub", daysAgo: 30),
        purchase("9", original: "9", product: "gems", daysAgo: 1),
    ]

    @Test func theNamedTransactionWinsOverTheNewest() throws {
        #expect(try VerifiedPurchase.choose(from: Self.receipt, productID: nil).transactionID == "9")
        #expect(
            try VerifiedPurchase.choose(from: Self.receipt, productID: nil, transactionID: "1").transactionID == "1")
        #expect(
            try VerifiedPurchase.choose(from: Self.receipt, productID: nil, transactionID: "2").transactionID == "2")
        #expect(
            try VerifiedPurchase.choose(
                from: Self.receipt.filter { $0.transactionID != "1" }, productID: nil, transactionID: "1"
            ).transactionID == "2",
            "a renewal stands for the chain its original started")
    }

    @Test func aNameTheEvidenceDoesNotHoldIsRefused() throws {
        let error = #expect(throws: StoreVerificationError.self) {
            try VerifiedPurchase.choose(from: Self.receipt, productID: nil, transactionID: "5")
        }
        #expect(error?.reason == "TRANSACTION_NOT_IN_EVIDENCE")
        #expect(error?.code == .verificationFailed)
        let mismatch = #expect(throws: StoreVerificationError.self) {
            try VerifiedPurchase.choose(from: Self.receipt, productID: "gems", transactionID: "1")
        }
        #expect(mismatch?.code == .productMismatch)
    }
}
