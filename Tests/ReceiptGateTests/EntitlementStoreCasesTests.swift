import AccountLink
import AppStoreTestSupport
import Foundation
import GooglePlay
import GooglePlayTestSupport
import ReceiptCore
import TestSupport
import Testing

@testable import ReceiptGate

/// What each store's purchases grant, over HTTP against a real Postgres: Google's consumables
/// never (whatever the catalog maps), a subscription in its billing grace period still, Amazon's
/// entitlements like any other store's, and the accounts of the account-link flow owning what is
/// linked to them.
@Suite struct EntitlementStoreCases {
    @Test func aGooglePurchaseConsumedOrConsumedForTheClientNeverGrants() async throws {
        let h = try await EntitlementHarness.start()
        defer { h.stop() }
        let catalog = h.harness.service.repositories.catalog
        for product in ["gems100", "noads_forever", "coins500"] {
            _ = try await catalog.set(
                client: h.client.clientID, store: "google_play", product: product, entitlements: ["badge_\(product)"],
                by: "test")
        }

        // Consumed by the app before the game server asked: a consumable, whatever the catalog says.
        try h.google.addProduct(
            token: "g-gems-consumed", productID: "gems100", orderID: "GPA.3301-0000-0000-00001", consumed: true)
        let consumed = try await h.client.post(
            "/v1/verify", json: ["store": "google_play", "receipt": "g-gems-consumed", "player_id": "gp1"])
        #expect(consumed.status == 200, "\(consumed.text)")
        #expect((try consumed.json()["transaction"] as? [String: Any])?["type"] as? String == "consumable")
        // The same through the v1 API (a purchase JSON naming its product).
        try h.google.addProduct(
            token: "g-coins-consumed", productID: "coins500", orderID: "GPA.3301-0000-0000-00002", consumed: true)
        let purchaseJSON =
            #"{"orderId":"GPA.3301-0000-0000-00002","packageName":"com.example.game","productId":"coins500","purchaseToken":"g-coins-consumed"}"#
        try await h.claimGoogle(purchaseJSON, for: "gp1")
        #expect(try await h.owned("gp1").byName.isEmpty, "consumed purchases grant nothing")

        // Not consumed: Google keeps it owned (it cannot be bought again), and so does the catalog.
        try h.google.addProduct(token: "g-noads", productID: "noads_forever", orderID: "GPA.3301-0000-0000-00003")
        try await h.claimGoogle("g-noads", for: "gp1")
        let owned = try await h.owned("gp1")
        #expect(Set(owned.byName.keys) == ["badge_noads_forever"], "\(owned.byName)")
        #expect(owned.byName["badge_noads_forever"]?["store"] as? String == "google_play")
        #expect(owned.byName["badge_noads_forever"]?["expires_date_ms"] is NSNull)

        // A client that has ReceiptGate consume its one-time products: each is a consumable.
        var consume = ClientSettings()
        consume.settings[GooglePlayProvider.Setting.consume] = ["on"]
        _ = try await h.harness.service.clients.update(h.client.clientID, consume)
        // The change reaches the serving process's client cache by notification: in effect there first.
        try await WebhookDelivery.waitUntil {
            try await h.harness.service.clientCache?.entry(for: h.client.clientID)?.client.info.setting(
                GooglePlayProvider.Setting.consume) == "on"
        }
        try h.google.addProduct(token: "g-gems-fresh", productID: "gems100", orderID: "GPA.3301-0000-0000-00004")
        let fresh = try await h.client.post(
            "/v1/verify", json: ["store": "google_play", "receipt": "g-gems-fresh", "player_id": "gp2"])
        #expect(
            (try fresh.json()["transaction"] as? [String: Any])?["type"] as? String == "consumable", "\(fresh.text)")
        #expect(try await h.owned("gp2").byName.isEmpty)
        try await WebhookDelivery.waitUntil {
            h.google.state.actions.get().contains("consume products/gems100 g-gems-fresh")
        }
        try await OutboxDrain.wait(h.harness.pool)
        #expect(h.told("granted").map(\.entitlement) == ["badge_noads_forever"])
    }

    @Test func aSubscriptionInItsGracePeriodIsOwnedAndARefundTakesItAway() async throws {
        let h = try await EntitlementHarness.start()
        defer { h.stop() }
        try await h.mapCatalog()
        let now = ClaimSupport.now()
        // The paid period ended a minute ago; Apple has not charged the renewal yet.
        var vip = ClaimSupport.subscription("2000000000990001")
        vip["environment"] = "Sandbox"
        vip["expiresDate"] = now - 60_000
        try await h.claimApple(vip, for: "grace-1")
        #expect(try await h.owned("grace-1").byName.isEmpty, "the period is over and no grace is known")

        // Billing failed, with a grace period of 16 days: the player keeps VIP meanwhile.
        let renewal: [String: any Sendable] = [
            "environment": "Sandbox", "originalTransactionId": "2000000000990001", "autoRenewStatus": 1,
            "gracePeriodExpiresDate": now + 16 * 86_400_000, "signedDate": now,
        ]
        let failed = try await NotificationsDriveTheLedger.notify(
            h.harness, type: "DID_FAIL_TO_RENEW", subtype: "GRACE_PERIOD",
            transaction: vip, renewal: renewal)
        #expect(failed.status == 200, "\(failed.text)")
        let owned = try await h.owned("grace-1")
        let inGrace = try #require(owned.byName["vip"], "\(owned)")
        #expect(inGrace["in_grace_period"] as? Bool == true)
        #expect(inGrace["expires_date_ms"] as? Int64 == now - 60_000)
        #expect(inGrace["grace_period_expires_date_ms"] as? Int64 == now + 16 * 86_400_000)

        // Refunded: the subscription grants nothing any more, and the game is told it was taken away.
        var refunded = vip
        refunded["revocationDate"] = now
        refunded["revocationReason"] = 0
        #expect(
            try await NotificationsDriveTheLedger.notify(h.harness, type: "REFUND", transaction: refunded).status == 200
        )
        #expect(try await h.owned("grace-1").byName.isEmpty)
        try await WebhookDelivery.waitUntil { h.told("revoked").count == 1 }
        #expect(h.told("granted").map(\.entitlement) == ["vip"])
        #expect(h.told("revoked").first?.player == "grace-1")

        // An active subscription refunded mid-period: revoked too.
        var active = ClaimSupport.subscription("2000000000990101", days: 20)
        active["environment"] = "Sandbox"
        try await h.claimApple(active, for: "grace-2")
        #expect(try await h.owned("grace-2").byName["vip"]?["in_grace_period"] as? Bool == false)
        active["revocationDate"] = ClaimSupport.now()
        active["revocationReason"] = 1
        #expect(
            try await NotificationsDriveTheLedger.notify(h.harness, type: "REFUND", transaction: active).status == 200)
        #expect(try await h.owned("grace-2").byName.isEmpty)
        try await WebhookDelivery.waitUntil { h.told("revoked").count == 2 }
        #expect(h.told("expired").isEmpty)
    }

    @Test func anAmazonEntitlementGrantsBesideTheOtherStores() async throws {
        let h = try await EntitlementHarness.start()
        defer { h.stop() }
        try await h.mapCatalog()
        _ = try await h.harness.service.repositories.catalog.set(
            client: h.client.clientID, store: "amazon_appstore", product: "noads_amazon",
            entitlements: ["no_ads"], by: "test")
        _ = try await h.harness.service.repositories.catalog.set(
            client: h.client.clientID, store: "amazon_appstore", product: "gems_amazon",
            entitlements: ["gem_badge"], by: "test")
        let user = "amzn1.account.player-a"
        try h.amazon.addReceipt("amz-noads-1", userID: user, productType: "ENTITLED", productID: "noads_amazon")
        try h.amazon.addReceipt("amz-gems-1", userID: user, productType: "CONSUMABLE", productID: "gems_amazon")
        for (receipt, product) in [("amz-noads-1", "noads_amazon"), ("amz-gems-1", "gems_amazon")] {
            let answer = try await h.client.post(
                "/v1/verify",
                json: [
                    "store": "amazon_appstore", "receipt": receipt, "product_id": product,
                    "amazon_user_id": user, "player_id": "amz-1",
                ])
            #expect(answer.status == 200, "\(answer.text)")
        }
        var vip = ClaimSupport.subscription("2000000000990201", days: 10)
        vip["environment"] = "Sandbox"
        try await h.claimApple(vip, for: "amz-1")
        let owned = try await h.owned("amz-1")
        #expect(
            Set(owned.byName.keys) == ["no_ads", "vip"], "an Amazon consumable grants nothing: \(owned.byName.keys)")
        let noAds = try #require(owned.byName["no_ads"])
        #expect(noAds["store"] as? String == "amazon_appstore")
        #expect(noAds["product_id"] as? String == "noads_amazon")
        #expect(noAds["transaction_id"] as? String == "amz-noads-1")
        #expect(noAds["expires_date_ms"] is NSNull)
        #expect(owned.byName["vip"]?["store"] as? String == "app_store")
    }

    @Test func anAccountOwnsWhatIsLinkedToItUntilItIsRefunded() async throws {
        let h = try await EntitlementHarness.start(dialects: [AccountLink()])
        defer { h.stop() }
        _ = try await h.harness.service.repositories.catalog.set(
            client: h.client.clientID, store: "app_store", product: "premium.monthly",
            entitlements: ["premium"], by: "test")
        // POST /iap records the purchase with no player id: the account it links to is the owner.
        let linked = try await AccountLinkEndToEnd.iap(
            h.harness.client.port, try AccountLinkEndToEnd.subscription(h.harness, "2000000000990301"))
        #expect(linked.status == 200, "\(linked.text)")
        let token = try #require(try linked.json()["access_token"] as? String)
        let account = try #require(
            try await AccountLinkEndToEnd.userinfo(h.harness.client.port, token).json()["sub"] as? String)

        let owned = try await h.owned(account)
        let premium = try #require(owned.byName["premium"], "the linked account owns it: \(owned)")
        #expect(premium["original_transaction_id"] as? String == "2000000000990301")
        #expect(premium["store"] as? String == "app_store")

        // Refunded: the account owns nothing, and the game is told so for that account.
        let refund = try await NotificationsDriveTheLedger.notify(
            h.harness, type: "REFUND",
            transaction: [
                "transactionId": "2000000000990301", "originalTransactionId": "2000000000990301",
                "productId": "premium.monthly",
                "type": "Auto-Renewable Subscription", "revocationDate": ClaimSupport.now(), "revocationReason": 0,
                "expiresDate": ClaimSupport.now() + 86_400_000,
            ])
        #expect(refund.status == 200, "\(refund.text)")
        #expect(try await h.owned(account).byName.isEmpty)
        try await WebhookDelivery.waitUntil { h.told("revoked").count == 1 }
        #expect(h.told("granted").map(\.player) == [account])
        #expect(h.told("revoked").map(\.player) == [account])
    }
}
