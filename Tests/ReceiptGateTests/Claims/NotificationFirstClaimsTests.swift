import AmazonAppstoreTestSupport
import AppStoreTestSupport
import Foundation
import GooglePlayTestSupport
import ReceiptGate
import TestSupport
import Testing

/// App Store notifications that write a ledger row before any game asks: the row is known, not
/// claimed, and the game's first verification of it is still its first.
enum AppStoreNews: String, CaseIterable, Sendable {
    case subscribed, didRenew, refundReversed, didFailToRenew

    struct Told {
        let type: String, subtype: String?, transaction: [String: any Sendable], renewal: [String: any Sendable]?
        var transactionID: String { transaction["transactionId"] as? String ?? "" }
    }

    /// The notification, and the transaction it tells of (which the game then claims).
    var told: Told {
        let now = ClaimSupport.now()
        switch self {
        case .subscribed:
            return Told(
                type: "SUBSCRIBED", subtype: "INITIAL_BUY", transaction: ClaimSupport.subscription("2000000000710001"),
                renewal: [
                    "environment": "Sandbox", "originalTransactionId": "2000000000710001", "autoRenewStatus": 1,
                    "signedDate": now,
                ])
        case .didRenew:
            return Told(
                type: "DID_RENEW", subtype: nil,
                transaction: ClaimSupport.subscription("2000000000720002", original: "2000000000720001"),
                renewal: [
                    "environment": "Sandbox", "originalTransactionId": "2000000000720001", "autoRenewStatus": 1,
                    "signedDate": now,
                ])
        case .refundReversed:
            return Told(
                type: "REFUND_REVERSED", subtype: nil,
                transaction: [
                    "transactionId": "2000000000730001", "originalTransactionId": "2000000000730001",
                    "productId": "gems.100",
                ],
                renewal: nil)
        case .didFailToRenew:
            // Apple could not charge the renewal; the period still runs, the grace period after it.
            var period = ClaimSupport.subscription("2000000000740001")
            period["expiresDate"] = now + 3_600_000
            return Told(
                type: "DID_FAIL_TO_RENEW", subtype: "GRACE_PERIOD", transaction: period,
                renewal: [
                    "environment": "Sandbox", "originalTransactionId": "2000000000740001", "autoRenewStatus": 1,
                    "gracePeriodExpiresDate": now + 16 * 86_400_000, "signedDate": now,
                ])
        }
    }
}

@Suite struct NotificationFirstClaims {
    @Test(arguments: AppStoreNews.allCases)
    func aNativeClaimAfterAnAppStoreNotificationIsTheFirstVerification(_ news: AppStoreNews) async throws {
        let receiver = try GooglePlayHarness.Receiver()
        let harness = try await ClaimSupport.appStore(receiver)
        defer { harness.stop(); ClaimSupport.stop(receiver) }
        let told = news.told, id = news.told.transactionID
        let pushed = try await NotificationsDriveTheLedger.notify(
            harness, type: told.type, subtype: told.subtype, transaction: told.transaction,
            renewal: told.renewal)
        #expect(pushed.status == 200, "\(pushed.text)")
        let known = try await ClaimSupport.record(harness.client, id)
        #expect(known.status == 200, "the notification wrote the row")
        #expect(known.transaction["claim"] is NSNull, "known from the store, claimed by nobody: \(known.transaction)")
        #expect(try await ClaimSupport.queued(harness.pool, type: "transaction.verified").isEmpty)
        #expect(try await ClaimSupport.queued(harness.pool, type: "entitlement.delivery").isEmpty)

        let receipt = try harness.pki.sign(AppleTestPKI.transaction(told.transaction))
        let before = ClaimSupport.now()
        let first = try await ClaimSupport.claim(harness.client, receipt: receipt)
        #expect(first.status == 200, "\(first.text)")
        #expect(try first.json()["duplicate"] as? Bool == false, "\(first.text)")
        #expect(try first.json()["status"] as? String == "verified", "\(first.text)")
        let after = ClaimSupport.now()
        let again = try await ClaimSupport.claim(harness.client, receipt: receipt)
        #expect(try again.json()["duplicate"] as? Bool == true, "\(again.text)")
        #expect(((try again.json()["transaction"]) as? [String: Any])?["transaction_id"] as? String == id)

        ClaimSupport.expectClaim(
            try await ClaimSupport.record(harness.client, id).transaction, madeWithin: before...after)
        try await OutboxDrain.wait(harness.pool)
        ClaimSupport.expectFirstVerificationDelivered(to: receiver, about: id)
        await harness.service.shutdown()
    }

    @Test(arguments: GoogleNews.allCases)
    func aNativeClaimAfterAGoogleNotificationIsTheFirstVerificationAndAloneAcknowledges(_ news: GoogleNews) async throws
    {
        let harness = try await GooglePlayHarness.start()
        defer { harness.stop() }
        try news.addPurchase(to: harness.google)
        let pushed = try await harness.push(news.notification, messageID: "pubsub-\(news.rawValue)")
        #expect(pushed.status == 200, "\(pushed.text)")
        let known = try await ClaimSupport.record(harness.client, store: "google_play", news.orderID)
        // A subscription purchase writes the row; a one-time purchase writes none yet. Either way nobody claimed it.
        #expect(known.status == 404 || known.transaction["claim"] is NSNull, "\(known)")
        if news == .subscriptionPurchased { #expect(known.status == 200) }
        #expect(
            try await ClaimSupport.queued(harness.pool, target: "store_acknowledgement").isEmpty,
            "the push alone acknowledges nothing")
        try await OutboxDrain.wait(harness.pool)
        #expect(harness.google.hits("acknowledge") == 0, "\(harness.google.state.actions.get())")

        let before = ClaimSupport.now()
        let first = try await ClaimSupport.claim(harness.client, store: "google_play", receipt: news.token)
        #expect(first.status == 200, "\(first.text)")
        #expect(try first.json()["duplicate"] as? Bool == false, "\(first.text)")
        #expect(try first.json()["status"] as? String == "verified")
        let after = ClaimSupport.now()
        try await WebhookDelivery.waitUntil { harness.google.state.actions.get() == [news.acknowledgement] }
        let again = try await ClaimSupport.claim(harness.client, store: "google_play", receipt: news.token)
        #expect(try again.json()["duplicate"] as? Bool == true, "\(again.text)")

        ClaimSupport.expectClaim(
            try await ClaimSupport.record(harness.client, store: "google_play", news.orderID).transaction,
            madeWithin: before...after)
        try await OutboxDrain.wait(harness.pool)
        #expect(harness.google.state.actions.get() == [news.acknowledgement], "acknowledged once, after the claim")
        #expect(try await ClaimSupport.queued(harness.pool, target: "store_acknowledgement").count == 1)
        #expect(
            ClaimSupport.received(harness.receiver, "transaction.verified", about: news.orderID).count == 1,
            "\(harness.receiver.bodies("/hooks"))")
    }

    @Test(arguments: AmazonNews.allCases)
    func aNativeClaimAfterAnAmazonNotificationIsTheFirstVerification(_ news: AmazonNews) async throws {
        let harness = try await AmazonAppstoreHarness.start()
        defer { harness.stop() }
        try news.addReceipt(to: harness.rvs)
        let body = try harness.sns.notification(
            AmazonAppstoreHarness.news(news.rawValue, receipt: news.receipt), messageID: "sns-\(news.receipt)")
        let pushed = try await harness.deliver(body)
        #expect(pushed.status == 200, "\(pushed.text)")
        let known = try await ClaimSupport.record(harness.client, store: "amazon_appstore", news.receipt)
        #expect(known.status == 404 || known.transaction["claim"] is NSNull, "\(known)")
        if news == .subscriptionPurchased { #expect(known.status == 200, "a subscription purchase writes the row") }
        #expect(try await ClaimSupport.queued(harness.pool, type: "transaction.verified").isEmpty)

        let evidence: [String: Any] = ["amazon_user_id": AmazonAppstoreEndToEnd.user, "product_id": news.product]
        let before = ClaimSupport.now()
        let first = try await ClaimSupport.claim(
            harness.client, store: "amazon_appstore", receipt: news.receipt, extra: evidence)
        #expect(first.status == 200, "\(first.text)")
        #expect(try first.json()["duplicate"] as? Bool == false, "\(first.text)")
        #expect(try first.json()["status"] as? String == "verified")
        let after = ClaimSupport.now()
        let again = try await ClaimSupport.claim(
            harness.client, store: "amazon_appstore", receipt: news.receipt, extra: evidence)
        #expect(try again.json()["duplicate"] as? Bool == true, "\(again.text)")
        let claimed = try await ClaimSupport.record(harness.client, store: "amazon_appstore", news.receipt)
        ClaimSupport.expectClaim(claimed.transaction, madeWithin: before...after)
        try await OutboxDrain.wait(harness.pool)
        #expect(
            ClaimSupport.received(harness.receiver, "transaction.verified", about: news.receipt).count == 1,
            "\(harness.receiver.bodies("/hooks"))")
    }
}

/// Google notifications of a purchase, before any game asks about it.
enum GoogleNews: String, CaseIterable, Sendable {
    case subscriptionPurchased, oneTimeProductPurchased

    var token: String { self == .subscriptionPurchased ? "sub-told-first" : "tok-told-first" }
    var orderID: String { self == .subscriptionPurchased ? "GPA.4100-0000-0000-00001" : "GPA.4200-0000-0000-00001" }
    var acknowledgement: String {
        self == .subscriptionPurchased
            ? "acknowledge subscriptions/vip.monthly \(token)" : "acknowledge products/gems100 \(token)"
    }

    func addPurchase(to google: FakeGooglePlay) throws {
        switch self {
        case .subscriptionPurchased: try google.addSubscription(token: token, latestOrderID: orderID)
        case .oneTimeProductPurchased: try google.addProduct(token: token, orderID: orderID)
        }
    }

    var notification: [String: Any] {
        var rtdn: [String: Any] = [
            "version": "1.0", "packageName": "com.example.game", "eventTimeMillis": String(ClaimSupport.now()),
        ]
        switch self {
        case .subscriptionPurchased:
            rtdn["subscriptionNotification"] = [
                "version": "1.0", "notificationType": 4, "purchaseToken": token, "subscriptionId": "vip.monthly",
            ]
        case .oneTimeProductPurchased:
            rtdn["oneTimeProductNotification"] = [
                "version": "1.0", "notificationType": 1, "purchaseToken": token, "sku": "gems100",
            ]
        }
        return rtdn
    }
}

/// Amazon Real-Time Notifications of a purchase, before any game asks about it.
enum AmazonNews: String, CaseIterable, Sendable {
    case subscriptionPurchased = "SUBSCRIPTION_PURCHASED", consumablePurchased = "CONSUMABLE_PURCHASED"

    var receipt: String { self == .subscriptionPurchased ? "r-sub-told-first" : "r-gems-told-first" }
    var product: String { self == .subscriptionPurchased ? "vip.monthly" : "gems100" }

    func addReceipt(to rvs: FakeRVS) throws {
        switch self {
        case .subscriptionPurchased:
            try rvs.addReceipt(
                receipt, userID: AmazonAppstoreEndToEnd.user, productType: "SUBSCRIPTION", productID: product,
                purchaseDate: Date().addingTimeInterval(-60), renewalDate: Date().addingTimeInterval(30 * 86_400),
                termSku: "vip.monthly.1m", autoRenewing: true)
        case .consumablePurchased:
            try rvs.addReceipt(receipt, userID: AmazonAppstoreEndToEnd.user)
        }
    }
}
