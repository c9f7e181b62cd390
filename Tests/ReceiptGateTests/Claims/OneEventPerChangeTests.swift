import AlogameGateway
import AmazonAppstoreTestSupport
import AppStoreTestSupport
import Foundation
import GooglePlayTestSupport
import ReceiptGate
import TestSupport
import Testing

/// A store telling us again what the ledger already says (a new notification of the same
/// refund) is no change: the game server hears of each change once, whoever tells it how often.
@Suite struct OneEventPerChange {
    static let id = "2000000000780001"

    /// A claimed App Store purchase of a client whose webhooks and refund callbacks go to `receiver`.
    static func claimed(_ receiver: GooglePlayHarness.Receiver) async throws -> VerifyHarness {
        let harness = try await ClaimSupport.appStore(receiver, dialects: [AlogameGateway()])
        try await ClaimSupport.sendRefundCallbacks(of: harness, to: receiver)
        let receipt = try harness.pki.sign(
            AppleTestPKI.transaction(["transactionId": id, "originalTransactionId": id, "productId": "gems100"]))
        let answer = try await ClaimSupport.claim(harness.client, receipt: receipt)
        #expect(answer.status == 200, "\(answer.text)")
        return harness
    }

    static func refund(_ harness: VerifyHarness, at date: Int64) async throws -> RawHTTP.Response {
        try await NotificationsDriveTheLedger.notify(
            harness, type: "REFUND",
            transaction: [
                "transactionId": id, "originalTransactionId": id, "productId": "gems100", "revocationDate": date,
                "revocationReason": 1,
            ])
    }

    static func webhookTypes(_ harness: VerifyHarness) async throws -> [String] {
        try await ClaimSupport.queued(harness.pool, target: "webhook").compactMap { $0["type"] as? String }
    }

    @Test func anAppStoreRefundToldTwiceIsOneRefundEventAndOneCallback() async throws {
        let receiver = try GooglePlayHarness.Receiver()
        let harness = try await Self.claimed(receiver)
        defer { harness.stop(); ClaimSupport.stop(receiver) }
        let refundedAt = ClaimSupport.now()
        // Two notifications, each with its own notificationUUID: the second is not Apple resending the first.
        for _ in 0..<2 {
            let told = try await Self.refund(harness, at: refundedAt)
            #expect(told.status == 200, "\(told.text)")
        }
        #expect(try await ClaimSupport.record(harness.client, Self.id).transaction["state"] as? String == "refunded")
        try await OutboxDrain.wait(harness.pool)
        #expect(
            ClaimSupport.received(receiver, "transaction.refunded", about: Self.id).count == 1,
            "\(receiver.bodies("/hooks"))")
        #expect(receiver.bodies("/refunds").count == 1, "\(receiver.bodies("/refunds"))")
        #expect(try await Self.webhookTypes(harness) == ["transaction.verified", "transaction.refunded"])
        await harness.service.shutdown()
    }

    @Test func aRefundItsReversalAndARefundAgainAreThreeChanges() async throws {
        let receiver = try GooglePlayHarness.Receiver()
        let harness = try await Self.claimed(receiver)
        defer { harness.stop(); ClaimSupport.stop(receiver) }
        #expect(try await Self.refund(harness, at: ClaimSupport.now()).status == 200)
        let reversed = try await NotificationsDriveTheLedger.notify(
            harness, type: "REFUND_REVERSED",
            transaction: [
                "transactionId": Self.id, "originalTransactionId": Self.id, "productId": "gems100",
            ])
        #expect(reversed.status == 200, "\(reversed.text)")
        #expect(try await ClaimSupport.record(harness.client, Self.id).transaction["state"] as? String == "active")
        #expect(try await Self.refund(harness, at: ClaimSupport.now()).status == 200)
        #expect(try await ClaimSupport.record(harness.client, Self.id).transaction["state"] as? String == "refunded")

        #expect(
            try await Self.webhookTypes(harness) == [
                "transaction.verified", "transaction.refunded", "transaction.refund_reversed",
                "transaction.refunded",
            ])
        try await OutboxDrain.wait(harness.pool)
        #expect(
            receiver.bodies("/refunds").count == 2, "each refund is owed its callback: \(receiver.bodies("/refunds"))")
        await harness.service.shutdown()
    }

    @Test func aGoogleVoidToldTwiceIsOneRefundEventAndOneCallback() async throws {
        let harness = try await GooglePlayHarness.start()
        defer { harness.stop() }
        let order = "GPA.7800-0000-0000-00001"
        try harness.google.addProduct(token: "tok-void-twice", orderID: order)
        #expect(
            try await ClaimSupport.claim(harness.client, store: "google_play", receipt: "tok-void-twice").status == 200)
        try harness.google.addVoided(token: "tok-void-twice", orderID: order, reason: 1)
        let void: [String: Any] = [
            "version": "1.0", "packageName": "com.example.game", "eventTimeMillis": String(ClaimSupport.now()),
            "voidedPurchaseNotification": [
                "purchaseToken": "tok-void-twice", "orderId": order, "productType": 2, "refundType": 1,
            ],
        ]
        // Pub/Sub messages of their own: Google told it twice.
        for message in ["pubsub-void-1", "pubsub-void-2"] {
            let told = try await harness.push(void, messageID: message)
            #expect(told.status == 200, "\(told.text)")
        }
        #expect(try await harness.transaction(order)?.decode("state", as: String.self) == "refunded")
        try await OutboxDrain.wait(harness.pool)
        #expect(
            ClaimSupport.received(harness.receiver, "transaction.refunded", about: order).count == 1,
            "\(harness.receiver.bodies("/hooks"))")
        #expect(harness.receiver.bodies("/refunds").count == 1, "\(harness.receiver.bodies("/refunds"))")
    }

    @Test func anAmazonCancellationToldTwiceIsOneRefundEventAndOneCallback() async throws {
        let harness = try await AmazonAppstoreHarness.start()
        defer { harness.stop() }
        try await AmazonAppstoreEndToEndNotifications.refundedAfterVerifying("r-cancel-twice", on: harness)
        // Two SNS messages (their own MessageIds), both naming the same cancellation.
        for message in ["sns-cancel-1", "sns-cancel-2"] {
            let body = try harness.sns.notification(
                AmazonAppstoreHarness.news("CONSUMABLE_CANCELLED", receipt: "r-cancel-twice"), messageID: message)
            let told = try await harness.deliver(body)
            #expect(told.status == 200, "\(told.text)")
        }
        #expect(try await harness.state("r-cancel-twice") == "refunded")
        try await OutboxDrain.wait(harness.pool)
        #expect(
            ClaimSupport.received(harness.receiver, "transaction.refunded", about: "r-cancel-twice").count == 1,
            "\(harness.receiver.bodies("/hooks"))")
        #expect(harness.receiver.bodies("/refunds").count == 1, "\(harness.receiver.bodies("/refunds"))")
    }
}
