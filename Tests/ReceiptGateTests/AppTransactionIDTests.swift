import AppStoreTestSupport
import Foundation
import ReceiptGate
import TestSupport
import Testing

/// The App Store's `appTransactionId` (one per Apple Account and app) is kept on the ledger's
/// row and shown as `app_transaction_id` wherever a transaction is: the verify answer, the read,
/// the webhooks.
@Suite struct AppTransactionIDs {
    static let buyer = "704289575718046473"

    @Test func aVerifiedPurchaseShowsItInTheAnswerTheReadAndTheWebhook() async throws {
        let receiver = try WebhookReceiver()
        receiver.up.set(true)
        let harness = try await VerifyHarness.start(outbox: VerifyHarness.fastOutbox(), webhookURL: receiver.url)
        defer { harness.stop() }
        receiver.secret.set(harness.client.secret)

        let receipt = try harness.pki.sign(
            AppleTestPKI.transaction([
                "transactionId": "2000000000007001", "originalTransactionId": "2000000000007001",
                "appTransactionId": Self.buyer,
            ]))
        let answer = try await harness.client.post("/v1/verify", json: ["store": "app_store", "receipt": receipt])
        #expect(answer.status == 200, "\(answer.text)")
        #expect((try answer.json()["transaction"] as? [String: Any])?["app_transaction_id"] as? String == Self.buyer)
        #expect(
            try await NotificationsDriveTheLedger.transaction(harness, "2000000000007001")["app_transaction_id"]
                as? String == Self.buyer)
        try await WebhookDelivery.waitUntil { receiver.acknowledged.contains { $0.type == "transaction.verified" } }
        let webhook = try #require(receiver.acknowledged.first { $0.type == "transaction.verified" })
        #expect(webhook.transaction?["app_transaction_id"] as? String == Self.buyer)

        // Evidence without one: the field is still there, null.
        let older = try harness.pki.sign(
            AppleTestPKI.transaction(["transactionId": "2000000000007002", "originalTransactionId": "2000000000007002"])
        )
        let plain = try await harness.client.post("/v1/verify", json: ["store": "app_store", "receipt": older])
        let shown = try #require(try plain.json()["transaction"] as? [String: Any])
        #expect(shown.keys.contains("app_transaction_id"))
        #expect(shown["app_transaction_id"] is NSNull)
        await harness.service.shutdown()
    }

    @Test func aNotificationRecordsItAndFillsARowRecordedWithoutIt() async throws {
        let receiver = try WebhookReceiver()
        receiver.up.set(true)
        let harness = try await VerifyHarness.start(outbox: VerifyHarness.fastOutbox(), webhookURL: receiver.url)
        defer { harness.stop() }
        receiver.secret.set(harness.client.secret)
        let now = Int64(Date().timeIntervalSince1970 * 1000)

        // Known from the store before any game asks: a renewal nobody verified.
        let renewal: [String: any Sendable] = [
            "transactionId": "2000000000007102", "originalTransactionId": "2000000000007101",
            "type": "Auto-Renewable Subscription", "productId": "vip.monthly", "expiresDate": now + 86_400_000,
            "appTransactionId": Self.buyer,
        ]
        #expect(
            try await NotificationsDriveTheLedger.notify(harness, type: "DID_RENEW", transaction: renewal).status == 200
        )
        #expect(
            try await NotificationsDriveTheLedger.transaction(harness, "2000000000007102")["app_transaction_id"]
                as? String == Self.buyer)
        try await WebhookDelivery.waitUntil { receiver.acknowledged.contains { $0.type == "subscription.renewed" } }
        #expect(
            receiver.acknowledged.first { $0.type == "subscription.renewed" }?.transaction?["app_transaction_id"]
                as? String == Self.buyer)

        // Recorded from evidence that lacked it; the store's later news of the purchase carries it.
        let bought = try harness.pki.sign(
            AppleTestPKI.transaction(["transactionId": "2000000000007201", "originalTransactionId": "2000000000007201"])
        )
        #expect(
            try await harness.client.post("/v1/verify", json: ["store": "app_store", "receipt": bought]).status == 200)
        #expect(
            try await NotificationsDriveTheLedger.transaction(harness, "2000000000007201")["app_transaction_id"]
                is NSNull)
        #expect(
            try await NotificationsDriveTheLedger.notify(
                harness, type: "REFUND",
                transaction: [
                    "transactionId": "2000000000007201", "originalTransactionId": "2000000000007201",
                    "revocationDate": now, "revocationReason": 1,
                    "appTransactionId": Self.buyer,
                ]
            ).status == 200)
        let refunded = try await NotificationsDriveTheLedger.transaction(harness, "2000000000007201")
        #expect(refunded["state"] as? String == "refunded")
        #expect(refunded["app_transaction_id"] as? String == Self.buyer)
        try await WebhookDelivery.waitUntil { receiver.acknowledged.contains { $0.type == "transaction.refunded" } }
        #expect(
            receiver.acknowledged.first { $0.type == "transaction.refunded" }?.transaction?["app_transaction_id"]
                as? String == Self.buyer)
        await harness.service.shutdown()
    }
}
