import AlogameGateway
import AppStoreTestSupport
import Foundation
import GooglePlayTestSupport
import ReceiptGate
import TestSupport
import Testing

/// How much a store refunded, as the ledger, its webhook and the Alogame refund callback say:
/// Apple's prorated refunds (App Store Server API 1.19's `revocationType` and
/// `revocationPercentage`, in milliunits) and Google's quantity-based voids are partial.
@Suite struct PartialRefunds {
    /// An App Store refund as Apple signs it, and what the ledger must make of it.
    struct AppleRefund: Sendable, CustomTestStringConvertible {
        let revocationType: String?, percentage: Int?
        let kind: String, shownPercentage: Int?

        var testDescription: String { revocationType ?? "no revocationType" }
        var fields: [String: any Sendable] {
            var fields: [String: any Sendable] = [:]
            if let revocationType { fields["revocationType"] = revocationType }
            if let percentage { fields["revocationPercentage"] = percentage }
            return fields
        }
    }

    static let appleRefunds = [
        AppleRefund(revocationType: "REFUND_PRORATED", percentage: 50_000, kind: "partial", shownPercentage: 50_000),
        AppleRefund(revocationType: "REFUND_FULL", percentage: nil, kind: "full", shownPercentage: nil),
        AppleRefund(revocationType: nil, percentage: nil, kind: "full", shownPercentage: nil),
    ]

    @Test(arguments: PartialRefunds.appleRefunds)
    func anAppStoreRefundSaysHowMuchWasRefunded(_ refund: AppleRefund) async throws {
        let receiver = try GooglePlayHarness.Receiver()
        let harness = try await ClaimSupport.appStore(receiver, dialects: [AlogameGateway()])
        defer { harness.stop(); ClaimSupport.stop(receiver) }
        try await ClaimSupport.sendRefundCallbacks(of: harness, to: receiver)
        let id = "2000000000790001"
        let purchase: [String: any Sendable] = [
            "transactionId": id, "originalTransactionId": id, "productId": "gems100",
        ]
        #expect(
            try await ClaimSupport.claim(
                harness.client, receipt: try harness.pki.sign(AppleTestPKI.transaction(purchase))
            ).status == 200)
        let never = try await ClaimSupport.record(harness.client, id).transaction
        #expect(never["refund"] is NSNull, "never refunded: \(never)")

        let refunded = purchase.merging(["revocationDate": ClaimSupport.now(), "revocationReason": 0]) { $1 }.merging(
            refund.fields
        ) { $1 }
        let told = try await NotificationsDriveTheLedger.notify(harness, type: "REFUND", transaction: refunded)
        #expect(told.status == 200, "\(told.text)")
        let record = try await ClaimSupport.record(harness.client, id).transaction
        #expect(record["state"] as? String == "refunded")
        #expect(
            ClaimSupport.isRefund(
                record["refund"], kind: refund.kind, percentage: refund.shownPercentage, quantity: nil,
                storeType: refund.revocationType), "\(record["refund"] ?? "absent")")

        try await OutboxDrain.wait(harness.pool)
        let hook = try #require(
            ClaimSupport.received(receiver, "transaction.refunded", about: id).first, "\(receiver.bodies("/hooks"))")
        #expect(
            ClaimSupport.isRefund(
                hook["refund"], kind: refund.kind, percentage: refund.shownPercentage, quantity: nil,
                storeType: refund.revocationType), "the webhook's refund: \(hook)")
        #expect(
            ClaimSupport.isRefund(
                (hook["transaction"] as? [String: Any])?["refund"], kind: refund.kind,
                percentage: refund.shownPercentage,
                quantity: nil, storeType: refund.revocationType), "the webhook's transaction.refund: \(hook)")

        let callback = try #require(receiver.bodies("/refunds").first, "no refund callback arrived")
        #expect(
            Set(["transaction_id", "product_id", "revocation_date", "revocation_reason", "game_id"]).isSubset(
                of: callback.keys), "\(callback)")
        #expect(callback["transaction_id"] as? String == id && callback["game_id"] as? Int == 42)
        if let shown = refund.shownPercentage {
            #expect(
                (callback["revocation_percentage"] as? NSNumber)?.doubleValue == Double(shown) / 1000,
                "the percent refunded: \(callback)")
            #expect(
                Set(callback.keys) == [
                    "transaction_id", "product_id", "revocation_date", "revocation_reason", "game_id",
                    "revocation_percentage",
                ])
        } else {
            #expect(
                Set(callback.keys) == [
                    "transaction_id", "product_id", "revocation_date", "revocation_reason", "game_id",
                ],
                "a full refund keeps the Alogame callback's body exactly: \(callback)")
        }
        await harness.service.shutdown()
    }

    @Test func aGoogleVoidOfTwoOfFiveIsAPartialRefundOfTwo() async throws {
        let harness = try await GooglePlayHarness.start()
        defer { harness.stop() }
        let order = "GPA.7900-0000-0000-00001"
        try harness.google.addProduct(token: "tok-two-of-five", orderID: order, quantity: 5)
        #expect(
            try await ClaimSupport.claim(harness.client, store: "google_play", receipt: "tok-two-of-five").status == 200
        )
        #expect(
            try await ClaimSupport.record(harness.client, store: "google_play", order).transaction["refund"] is NSNull)

        // Google lists the void: two of the five refunded (refundType 2, quantity-based partial).
        try harness.google.addVoided(
            token: "tok-two-of-five", orderID: order, reason: 1, refundType: 2, voidedQuantity: 2)
        let told = try await harness.push(
            [
                "version": "1.0", "packageName": "com.example.game", "eventTimeMillis": String(ClaimSupport.now()),
                "voidedPurchaseNotification": [
                    "purchaseToken": "tok-two-of-five", "orderId": order, "productType": 2,
                    "refundType": 2,
                ],
            ], messageID: "pubsub-two-of-five")
        #expect(told.status == 200, "\(told.text)")
        let record = try await ClaimSupport.record(harness.client, store: "google_play", order).transaction
        let refund = try #require(record["refund"] as? [String: Any], "\(record)")
        #expect(refund["kind"] as? String == "partial", "\(refund)")
        #expect(refund["quantity"] as? Int == 2, "\(refund)")
        #expect(record["quantity"] as? Int == 5, "the purchase itself was of five")
        try await OutboxDrain.wait(harness.pool)
        let hook = ClaimSupport.received(harness.receiver, "transaction.refunded", about: order).first
        #expect((hook?["refund"] as? [String: Any])?["quantity"] as? Int == 2, "the webhook's refund: \(hook ?? [:])")
    }
}
