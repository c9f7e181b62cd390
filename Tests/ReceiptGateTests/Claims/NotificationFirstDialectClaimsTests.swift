import AccountLink
import AlogameGateway
import AppStoreTestSupport
import Foundation
import GooglePlayTestSupport
import HiveAxyl
import ReceiptCore
import ReceiptGate
import TestSupport
import Testing

/// A purchase the store told us of first, then claimed through a dialect: each dialect answers
/// the first claim as its first verification, in its own terms, and a later one as a duplicate.
@Suite struct NotificationFirstDialectClaims {
    static let id = "2000000000750001"

    /// A service speaking `dialects`, that Apple already told of subscription `id` (SUBSCRIBED, INITIAL_BUY).
    static func subscribedFirst(
        _ receiver: GooglePlayHarness.Receiver, dialects: [any DialectProvider]
    ) async throws -> VerifyHarness {
        let harness = try await ClaimSupport.appStore(receiver, dialects: dialects)
        let pushed = try await NotificationsDriveTheLedger.notify(
            harness, type: "SUBSCRIBED", subtype: "INITIAL_BUY",
            transaction: ClaimSupport.subscription(id),
            renewal: [
                "environment": "Sandbox", "originalTransactionId": id, "autoRenewStatus": 1,
                "signedDate": ClaimSupport.now(),
            ])
        #expect(pushed.status == 200, "\(pushed.text)")
        let known = try await ClaimSupport.record(harness.client, id)
        #expect(known.status == 200 && known.transaction["claim"] is NSNull, "known, not claimed: \(known)")
        return harness
    }

    static func receipt(_ harness: VerifyHarness) throws -> String {
        try harness.pki.sign(AppleTestPKI.transaction(ClaimSupport.subscription(id)))
    }

    @Test func theAlogameGatewayAnswersTheFirstClaim200AndTheNext409() async throws {
        let receiver = try GooglePlayHarness.Receiver()
        let harness = try await Self.subscribedFirst(receiver, dialects: [AlogameGateway()])
        defer { harness.stop(); ClaimSupport.stop(receiver) }
        var body: [String: Any] = ["receipt": try Self.receipt(harness), "product_id": "vip.monthly", "os_id": 2]
        for (key, value) in ClaimSupport.player { body[key] = value }
        let before = ClaimSupport.now()
        let first = try await harness.client.post("/iap/gateway/verify", json: body)
        #expect(first.status == 200, "\(first.text)")
        #expect(try first.json()["success"] as? Bool == true)
        #expect(try first.json()["transaction_id"] as? String == Self.id)
        let after = ClaimSupport.now()
        let again = try await harness.client.post("/iap/gateway/verify", json: body)
        #expect(again.status == 409, "\(again.text)")
        #expect(try again.json()["error"] as? String == "DUPLICATE_TRANSACTION")

        ClaimSupport.expectClaim(
            try await ClaimSupport.record(harness.client, Self.id).transaction, madeWithin: before...after)
        try await OutboxDrain.wait(harness.pool)
        ClaimSupport.expectFirstVerificationDelivered(to: receiver, about: Self.id)
        await harness.service.shutdown()
    }

    @Test func hiveAxylAnswersTheFirstClaimNotDuplicatedAndTheNextDuplicated() async throws {
        let receiver = try GooglePlayHarness.Receiver()
        let harness = try await Self.subscribedFirst(receiver, dialects: [HiveAxyl()])
        defer { harness.stop(); ClaimSupport.stop(receiver) }
        let caller = try await HiveAxylCaller.on(harness)
        let token = try await caller.token()
        let body = HiveAxylCaller.subscription(try Self.receipt(harness))
        let first = try await caller.verify(HiveAxylAgainstTheLedger.subscriptionPath, body, token: token)
        #expect(first.status == 200, "\(first.text)")
        #expect(first.hiveCode == 100)
        #expect(first.hiveData?["hiveAxylDuplicated"] as? Bool == false, "\(first.text)")
        let again = try await caller.verify(HiveAxylAgainstTheLedger.subscriptionPath, body, token: token)
        #expect(again.hiveData?["hiveAxylDuplicated"] as? Bool == true, "\(again.text)")

        #expect(
            try await ClaimSupport.record(harness.client, Self.id).transaction["claim"] is [String: Any],
            "the claim is on the record")
        try await OutboxDrain.wait(harness.pool)
        #expect(
            ClaimSupport.received(receiver, "transaction.verified", about: Self.id).count == 1,
            "\(receiver.bodies("/hooks"))")
        #expect(
            ClaimSupport.received(receiver, "entitlement.delivery", about: Self.id).count == 1,
            "\(receiver.bodies("/hooks"))")
        await harness.service.shutdown()
    }

    @Test func accountLinkCreatesTheAccountOnTheFirstClaimAndFindsItOnTheNext() async throws {
        let receiver = try GooglePlayHarness.Receiver()
        let harness = try await Self.subscribedFirst(receiver, dialects: [AccountLink()])
        defer { harness.stop(); ClaimSupport.stop(receiver) }
        let port = harness.client.port
        let jws = try Self.receipt(harness)
        let first = try await AccountLinkEndToEnd.iap(port, jws)
        #expect(first.status == 200, "\(first.text)")
        #expect(try first.json()["auto_account_created"] as? Bool == true, "linked as a new purchase: \(first.text)")
        let token = try #require(try first.json()["access_token"] as? String)
        let entitlements =
            try await AccountLinkEndToEnd.userinfo(port, token).json()["entitlements"] as? [[String: Any]] ?? []
        #expect(entitlements.contains { $0["original_transaction_id"] as? String == Self.id }, "\(entitlements)")

        let again = try await AccountLinkEndToEnd.iap(port, jws)
        #expect(again.status == 200, "\(again.text)")
        #expect(
            try again.json()["auto_account_created"] as? Bool == false,
            "the account the first claim made: \(again.text)")
        #expect(try await harness.count("accounts") == 1)
        #expect(
            try await ClaimSupport.record(harness.client, Self.id).transaction["claim"] is [String: Any],
            "the claim is on the record")
        try await OutboxDrain.wait(harness.pool)
        #expect(
            ClaimSupport.received(receiver, "transaction.verified", about: Self.id).count == 1,
            "\(receiver.bodies("/hooks"))")
        await harness.service.shutdown()
    }

    @Test func theAlogameGatewayClaimsAGooglePurchaseGoogleToldUsOfAndOnlyThenAcknowledges() async throws {
        let harness = try await GooglePlayHarness.start()
        defer { harness.stop() }
        let news = GoogleNews.oneTimeProductPurchased
        try news.addPurchase(to: harness.google)
        #expect(try await harness.push(news.notification, messageID: "pubsub-alogame").status == 200)
        try await OutboxDrain.wait(harness.pool)
        #expect(harness.google.hits("acknowledge") == 0, "the push alone acknowledges nothing")

        var body: [String: Any] = ["receipt": news.token, "product_id": "gems100", "os_id": 1]
        for (key, value) in ClaimSupport.player { body[key] = value }
        let before = ClaimSupport.now()
        let first = try await harness.client.post("/iap/gateway/verify", json: body)
        #expect(first.status == 200, "\(first.text)")
        #expect(try first.json()["transaction_id"] as? String == news.orderID)
        let after = ClaimSupport.now()
        let again = try await harness.client.post("/iap/gateway/verify", json: body)
        #expect(again.status == 409, "\(again.text)")
        #expect(try again.json()["error"] as? String == "DUPLICATE_TRANSACTION")

        ClaimSupport.expectClaim(
            try await ClaimSupport.record(harness.client, store: "google_play", news.orderID).transaction,
            madeWithin: before...after)
        try await WebhookDelivery.waitUntil { harness.google.state.actions.get() == [news.acknowledgement] }
        try await OutboxDrain.wait(harness.pool)
        #expect(harness.google.state.actions.get() == [news.acknowledgement], "acknowledged once")
        #expect(ClaimSupport.received(harness.receiver, "transaction.verified", about: news.orderID).count == 1)
    }
}
