import AppStoreTestSupport
import Foundation
import Postgres
import ReceiptGate
import TestSupport
import Testing

/// The App Store's 2025–26 purchase shapes through the whole service: an offer code redeemed for a
/// consumable outside the app, an Advanced Commerce purchase refunded item by item, and a monthly
/// subscription with a 12-month commitment whose auto-renew is switched off mid-commitment.
@Suite struct AppStoreCommerceEndToEnd {
    static let now = ClaimSupport.now()
    static let day: Int64 = 86_400_000
    static let adminToken = "commerce-admin-token-0123456789abcdef"

    /// A consumable bought with an offer code outside the app: no account token.
    static func offerCodeGems(_ id: String) -> [String: any Sendable] {
        [
            "transactionId": id, "originalTransactionId": id, "type": "Consumable", "productId": "gems.500",
            "offerType": 3, "offerIdentifier": "SPRING-GEMS", "offerDiscountType": "ONE_TIME", "price": 0,
        ]
    }

    static func entitlements(
        _ harness: VerifyHarness, _ player: String = "player-7"
    ) async throws -> [String: [String: Any]] {
        let answer = try await harness.client.get("/v1/players/\(player)/entitlements").json()
        let list = answer["entitlements"] as? [[String: Any]] ?? []
        return Dictionary(
            list.map { ($0["entitlement"] as? String ?? "", $0) }, uniquingKeysWith: { first, _ in first })
    }

    @Test func anOfferCodeRedeemedOutsideTheAppIsRecordedKnownThenClaimedWithItsOffer() async throws {
        let receiver = try GooglePlayHarness.Receiver()
        let harness = try await ClaimSupport.appStore(receiver, adminToken: Self.adminToken)
        defer { harness.stop(); ClaimSupport.stop(receiver) }
        let id = "2000000000910001"
        let told = try await NotificationsDriveTheLedger.notify(
            harness, type: "ONE_TIME_CHARGE", transaction: Self.offerCodeGems(id))
        #expect(told.status == 200, "\(told.text)")

        let known = try await ClaimSupport.record(harness.client, id)
        #expect(known.status == 200, "a one-time charge writes the row")
        #expect(known.transaction["claim"] is NSNull, "known from the store, claimed by nobody: \(known.transaction)")
        #expect(known.transaction["app_account_token"] is NSNull)
        let offer = try #require(known.transaction["offer"] as? [String: Any], "\(known.transaction)")
        #expect(offer["type"] as? String == "offer_code")
        #expect(offer["identifier"] as? String == "SPRING-GEMS")
        #expect(offer["discount_type"] as? String == "ONE_TIME")
        #expect(offer["period"] is NSNull)
        #expect(try await ClaimSupport.queued(harness.pool, type: "transaction.verified").isEmpty)

        let receipt = try harness.pki.sign(AppleTestPKI.transaction(Self.offerCodeGems(id)))
        let first = try await ClaimSupport.claim(harness.client, receipt: receipt)
        #expect(first.status == 200, "\(first.text)")
        let answer = try first.json()
        #expect(answer["duplicate"] as? Bool == false && answer["status"] as? String == "verified", "\(first.text)")
        #expect(
            ((answer["transaction"] as? [String: Any])?["offer"] as? [String: Any])?["type"] as? String == "offer_code")
        let again = try await ClaimSupport.claim(harness.client, receipt: receipt)
        #expect(try again.json()["duplicate"] as? Bool == true, "\(again.text)")

        try await OutboxDrain.wait(harness.pool)
        ClaimSupport.expectFirstVerificationDelivered(to: receiver, about: id)
        let verified = ClaimSupport.received(receiver, "transaction.verified", about: id)
        let webhookOffer = (verified.first?["transaction"] as? [String: Any])?["offer"] as? [String: Any]
        #expect(webhookOffer?["identifier"] as? String == "SPRING-GEMS", "the webhook tells the offer: \(verified)")

        let browser = ConsoleBrowserSession(port: harness.service.port)
        _ = try await browser.signIn(token: Self.adminToken)
        let page = try await browser.get("/console/purchases/app_store/\(id)")
        #expect(page.status == 200)
        #expect(
            page.text.contains(#"<dd id="record-offer">offer_code, “SPRING-GEMS”, ONE_TIME</dd>"#),
            "the purchase page shows the offer: \(page.text)")

        // The same notification again (Apple retries) records nothing more.
        let retried = try await NotificationsDriveTheLedger.notify(
            harness, type: "ONE_TIME_CHARGE", transaction: Self.offerCodeGems(id))
        #expect(retried.status == 200)
        #expect(try await ClaimSupport.record(harness.client, id).transaction["claim"] is [String: Any])
        await harness.service.shutdown()
    }

    static func swords(refunded: Bool) -> [String: any Sendable] {
        var fire: [String: any Sendable] = ["SKU": "sword.fire", "displayName": "Fire sword", "price": 1990]
        if refunded {
            fire["refunds"] =
                [
                    [
                        "refundAmount": 1990, "refundDate": now, "refundReason": "UNINTENDED_PURCHASE",
                        "refundType": "FULL",
                    ]
                        as [String: any Sendable]
                ] as [any Sendable]
            fire["revocationDate"] = now
        }
        return [
            "transactionId": "2000000000920001", "originalTransactionId": "2000000000920001", "type": "Non-Consumable",
            "productId": "com.example.game.ac", "price": 3980,
            "advancedCommerceInfo": [
                "requestReferenceId": "ref-1",
                "items": [
                    fire, ["SKU": "sword.ice", "displayName": "Ice sword", "price": 1990] as [String: any Sendable],
                ]
                    as [any Sendable],
            ] as [String: any Sendable],
        ]
    }

    @Test func aRefundOfSomeAdvancedCommerceItemsWithdrawsOnlyTheirGrants() async throws {
        let receiver = try GooglePlayHarness.Receiver()
        let harness = try await ClaimSupport.appStore(receiver, adminToken: Self.adminToken)
        defer { harness.stop(); ClaimSupport.stop(receiver) }
        _ = try await harness.service.repositories.catalog.set(
            client: harness.client.clientID, store: "app_store", product: "sword.fire", entitlements: ["fire_sword"],
            by: "test")
        let id = "2000000000920001"
        let claimed = try await ClaimSupport.claim(
            harness.client, receipt: try harness.pki.sign(AppleTestPKI.transaction(Self.swords(refunded: false))))
        #expect(claimed.status == 200, "\(claimed.text)")
        let items = ((try claimed.json()["transaction"] as? [String: Any])?["items"] as? [[String: Any]]) ?? []
        #expect(items.map { $0["sku"] as? String } == ["sword.fire", "sword.ice"], "\(claimed.text)")
        #expect(try await Self.entitlements(harness).keys.sorted() == ["fire_sword"])
        // A SKU mapped after the sale reaches the player who holds the item.
        _ = try await harness.service.repositories.catalog.set(
            client: harness.client.clientID, store: "app_store", product: "sword.ice", entitlements: ["ice_sword"],
            by: "test")
        #expect(
            await eventually { (try? await Self.entitlements(harness).keys.sorted()) == ["fire_sword", "ice_sword"] },
            "the catalog's refresh finds the item's holder")
        #expect(try await Self.entitlements(harness)["fire_sword"]?["product_id"] as? String == "sword.fire")

        let refund = try await NotificationsDriveTheLedger.notify(
            harness, type: "REFUND", transaction: Self.swords(refunded: true))
        #expect(refund.status == 200, "\(refund.text)")
        let record = try await ClaimSupport.record(harness.client, id).transaction
        #expect(record["state"] as? String == "active", "the purchase itself stands: \(record)")
        #expect(record["revocation_date_ms"] is NSNull)
        let fire = (record["items"] as? [[String: Any]])?.first
        #expect(
            (fire?["refunds"] as? [[String: Any]])?.first?["reason"] as? String == "UNINTENDED_PURCHASE", "\(record)")
        #expect(fire?["revocation_date_ms"] as? Int64 == Self.now)
        #expect(
            await eventually { (try? await Self.entitlements(harness).keys.sorted()) == ["ice_sword"] },
            "only the refunded item's grant is withdrawn")

        try await OutboxDrain.wait(harness.pool)
        let told = ClaimSupport.received(receiver, "transaction.items_refunded", about: id)
        #expect(told.count == 1, "\(receiver.bodies("/hooks"))")
        #expect(
            ((told.first?["refunded_items"] as? [[String: Any]]) ?? []).map { $0["sku"] as? String } == ["sword.fire"])
        #expect(ClaimSupport.received(receiver, "transaction.refunded", about: id).isEmpty, "nor a full refund")
        let browser = ConsoleBrowserSession(port: harness.service.port)
        _ = try await browser.signIn(token: Self.adminToken)
        let page = try await browser.get("/console/purchases/app_store/\(id)").text
        #expect(page.contains(#"<td class="sku">sword.fire</td>"#) && page.contains("UNINTENDED_PURCHASE"), "\(page)")

        // Apple telling the same refund again changes nothing and tells nothing more.
        _ = try await NotificationsDriveTheLedger.notify(
            harness, type: "REFUND", transaction: Self.swords(refunded: true))
        try await OutboxDrain.wait(harness.pool)
        #expect(ClaimSupport.received(receiver, "transaction.items_refunded", about: id).count == 1)
        await harness.service.shutdown()
    }

    static func pack(_ id: String, original: String, skus: [String], days: Int64) -> [String: any Sendable] {
        [
            "transactionId": id, "originalTransactionId": original, "type": "Auto-Renewable Subscription",
            "productId": "com.example.game.ac.pack", "expiresDate": now + days * day,
            "advancedCommerceInfo": [
                "period": "P1M",
                "items": skus.map { ["SKU": $0, "price": 990] as [String: any Sendable] } as [any Sendable],
            ] as [String: any Sendable],
        ]
    }

    @Test func anAdvancedCommerceSubscriptionGrantsWhatItsLatestPeriodsItemsMap() async throws {
        let receiver = try GooglePlayHarness.Receiver()
        let harness = try await ClaimSupport.appStore(receiver)
        defer { harness.stop(); ClaimSupport.stop(receiver) }
        _ = try await harness.service.repositories.catalog.set(
            client: harness.client.clientID, store: "app_store", product: "pack.gold", entitlements: ["gold"],
            by: "test")
        let original = "2000000000950001"
        let first = Self.pack(original, original: original, skus: ["pack.gold", "pack.silver"], days: 10)
        let claimed = try await ClaimSupport.claim(
            harness.client, receipt: try harness.pki.sign(AppleTestPKI.transaction(first)))
        #expect(claimed.status == 200, "\(claimed.text)")
        #expect(try await Self.entitlements(harness)["gold"]?["product_id"] as? String == "pack.gold")

        // The next period sells silver only: gold is no longer the player's.
        let renewal = Self.pack("2000000000950002", original: original, skus: ["pack.silver"], days: 40)
        let renewed = try await NotificationsDriveTheLedger.notify(harness, type: "DID_RENEW", transaction: renewal)
        #expect(renewed.status == 200, "\(renewed.text)")
        #expect(
            await eventually { (try? await Self.entitlements(harness)["gold"]) == nil },
            "what the latest period sells is what the subscription grants")
        await harness.service.shutdown()
    }

    static func yearlyPass(_ id: String, commitment: Bool) -> [String: any Sendable] {
        var period: [String: any Sendable] = [
            "transactionId": id, "originalTransactionId": id, "type": "Auto-Renewable Subscription",
            "productId": "pass.yearly", "expiresDate": now + 20 * day,
        ]
        if commitment {
            period["billingPlanType"] = "MONTHLY"
            period["commitmentInfo"] =
                [
                    "billingPeriodNumber": 3, "totalBillingPeriods": 12, "commitmentExpiresDate": now + 270 * day,
                    "commitmentPrice": 119_880,
                ] as [String: any Sendable]
        }
        return period
    }

    @Test(arguments: [true, false])
    func aCommitmentPlanStillRenewsWhenAutoRenewIsSwitchedOffMidCommitment(_ commitment: Bool) async throws {
        let receiver = try GooglePlayHarness.Receiver()
        let harness = try await ClaimSupport.appStore(receiver)
        defer { harness.stop(); ClaimSupport.stop(receiver) }
        _ = try await harness.service.repositories.catalog.set(
            client: harness.client.clientID, store: "app_store", product: "pass.yearly", entitlements: ["pass"],
            by: "test")
        let id = commitment ? "2000000000930001" : "2000000000930002"
        let period = Self.yearlyPass(id, commitment: commitment)
        let claimed = try await ClaimSupport.claim(
            harness.client, receipt: try harness.pki.sign(AppleTestPKI.transaction(period)))
        #expect(claimed.status == 200, "\(claimed.text)")

        let switchedOff = try await NotificationsDriveTheLedger.notify(
            harness, type: "DID_CHANGE_RENEWAL_STATUS", subtype: "AUTO_RENEW_DISABLED", transaction: period,
            renewal: [
                "environment": "Sandbox", "originalTransactionId": id, "productId": "pass.yearly", "autoRenewStatus": 0,
                "signedDate": Self.now, "renewalBillingPlanType": "MONTHLY",
            ])
        #expect(switchedOff.status == 200, "\(switchedOff.text)")
        let subscription = try await harness.client.get("/v1/subscriptions/app_store/\(id)").json()
        #expect(subscription["auto_renew"] as? Bool == false, "the store's word is kept: \(subscription)")
        #expect(
            subscription["will_renew"] as? Bool == commitment,
            "a commitment with payments left renews; a plain yearly plan does not: \(subscription)")
        if commitment {
            let terms = try #require(subscription["commitment"] as? [String: Any], "\(subscription)")
            #expect(terms["billing_plan_type"] as? String == "MONTHLY")
            #expect(terms["billing_period_number"] as? Int == 3 && terms["total_billing_periods"] as? Int == 12)
            #expect(terms["expires_date_ms"] as? Int64 == Self.now + 270 * Self.day)
        } else {
            #expect(subscription["commitment"] is NSNull)
        }
        #expect(
            await eventually {
                (try? await Self.entitlements(harness)["pass"]?["will_renew"] as? Bool) == commitment
            }, "the entitlement's will_renew follows the commitment")
        await harness.service.shutdown()
    }

    /// Notifications 2.19+ that tell of Advanced Commerce subscriptions (metadata changed,
    /// migrated, price changed, with PRICE_CHANGE's subtypes): accepted, recorded once, and, as
    /// Apple describes them, news that leaves the purchase and what it grants as they were.
    @Test(
        arguments: [
            ("METADATA_UPDATE", nil), ("MIGRATION", nil), ("PRICE_CHANGE", "PENDING"), ("PRICE_CHANGE", "ACCEPTED"),
        ] as [(String, String?)])
    func advancedCommerceSubscriptionNewsIsRecordedAndLeavesTheLedger(_ type: String, _ subtype: String?) async throws {
        let receiver = try GooglePlayHarness.Receiver()
        let harness = try await ClaimSupport.appStore(receiver)
        defer { harness.stop(); ClaimSupport.stop(receiver) }
        let id = "2000000000940001"
        let period = Self.yearlyPass(id, commitment: false)
        _ = try await ClaimSupport.claim(
            harness.client, receipt: try harness.pki.sign(AppleTestPKI.transaction(period)))
        let before = try await ClaimSupport.record(harness.client, id).transaction
        let uuid = UUID().uuidString.lowercased()
        let told = try await NotificationsDriveTheLedger.notify(
            harness, type: type, subtype: subtype, transaction: period,
            renewal: [
                "environment": "Sandbox", "originalTransactionId": id, "productId": "pass.yearly", "autoRenewStatus": 1,
                "signedDate": Self.now,
                "advancedCommerceInfo": ["consistencyToken": "token-2", "period": "P1Y"] as [String: any Sendable],
            ], uuid: uuid)
        #expect(told.status == 200, "\(told.text)")
        let stored = try await harness.pool.query(
            "SELECT notification_type, subtype FROM store_notifications WHERE notification_id = \(uuid)")
        #expect(stored.count == 1, "recorded once")
        #expect(try stored.first?.decode("notification_type", as: String.self) == type)
        #expect(try stored.first?.decode("subtype", as: String?.self) == subtype)
        let after = try await ClaimSupport.record(harness.client, id).transaction
        #expect(after["state"] as? String == before["state"] as? String)
        #expect(after["expires_date_ms"] as? Int64 == before["expires_date_ms"] as? Int64)
        try await OutboxDrain.wait(harness.pool)
        let news = receiver.bodies("/hooks").compactMap { $0["type"] as? String }.filter {
            $0 != "transaction.verified" && $0 != "entitlement.delivery"
        }
        #expect(news.isEmpty, "no news for the game: \(news)")
        await harness.service.shutdown()
    }
}
