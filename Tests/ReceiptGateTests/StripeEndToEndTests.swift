import AppStoreTestSupport
import Foundation
import HTTPClient
import Postgres
import ReceiptCore
import ReceiptGate
import Stripe
import StripeTestSupport
import TestSupport
import Testing

/// Stripe through the running service and Postgres, against a fake Stripe: a webhook to the
/// client's own endpoint, signed, read back and claimed for the session's player; the same event
/// twice and found again by reconciliation applied once; forged and stale signatures refused;
/// prices in every kind of minor unit; refunds, disputes, a subscription's life; `/v1/verify`
/// of a Checkout Session id.
@Suite struct StripeEndToEnd {
    @Test func aPaidSessionIsDeliveredToItsPlayerOnceHoweverOftenItIsTold() async throws {
        let shop = try await StripeShop.start()
        defer { shop.stop() }
        let sale = shop.fake.sale(
            player: "player-7",
            lines: [.init("prod_gems", unitAmount: 199, quantity: 2), .init("prod_vip", unitAmount: 999)])
        let webhook = try shop.fake.webhook("checkout.session.completed", about: sale.session)
        let first = try await shop.push(webhook)
        #expect(first.status == 200, "\(first.text)")
        let again = try await shop.push(try shop.fake.signed(webhook.id))
        #expect(again.status == 200, "\(again.text)")
        // A webhook that never arrived, for another sale: the event list brings it.
        let lost = shop.fake.sale(player: "player-8", lines: [.init("prod_gems", unitAmount: 199)])
        shop.fake.event("checkout.session.completed", about: lost.session)
        _ = try await shop.harness.service.reconcile(store: .stripe, since: nil)
        try await OutboxDrain.wait(shop.harness.pool)
        for item in sale.lineItems {
            #expect(ClaimSupport.received(shop.receiver, "transaction.verified", about: item).count == 1)
            let deliveries = ClaimSupport.received(shop.receiver, "entitlement.delivery", about: item)
            #expect(deliveries.count == 1, "\(shop.receiver.bodies("/hooks"))")
            #expect(deliveries.first?["player_id"] as? String == "player-7")
        }
        let found = ClaimSupport.received(shop.receiver, "entitlement.delivery", about: lost.lineItems[0])
        #expect(found.count == 1 && found.first?["player_id"] as? String == "player-8", "\(found)")
        let record = try await ClaimSupport.record(shop.harness.client, store: "stripe", sale.lineItems[0])
        #expect(record.status == 200)
        #expect(record.transaction["product_id"] as? String == "prod_gems")
        #expect(record.transaction["quantity"] as? Int == 2)
        #expect(record.transaction["order_id"] as? String == sale.paymentIntent)
        #expect(record.transaction["environment"] as? String == "sandbox")
        #expect((record.transaction["claim"] as? [String: Any])?["player_id"] as? String == "player-7")
        // Once more after the run: still once.
        _ = try await shop.harness.service.reconcile(store: .stripe, since: nil)
        try await OutboxDrain.wait(shop.harness.pool)
        #expect(ClaimSupport.received(shop.receiver, "transaction.verified", about: sale.lineItems[0]).count == 1)
    }

    @Test func aForgedOrStaleSignatureIsRefusedAndRecordsNothing() async throws {
        // No reconciliation: it would find the genuine event in the list and apply it, rightly.
        let shop = try await StripeShop.start(reconciles: false)
        defer { shop.stop() }
        let sale = shop.fake.sale(player: "player-7", lines: [.init("prod_gems", unitAmount: 199)])
        let genuine = try shop.fake.webhook("checkout.session.completed", about: sale.session)
        let forged = try shop.fake.signed(genuine.id, secret: "whsec_forger")
        let stale = try shop.fake.signed(genuine.id, timestamp: shop.fake.unixNow - 3600)
        for webhook in [forged, stale] {
            let answer = try await shop.push(webhook)
            #expect(answer.status == 400, "\(answer.text)")
        }
        let unsigned = try await shop.push(genuine, headers: ["Content-Type": "application/json"])
        #expect(unsigned.status == 400, "\(unsigned.text)")
        #expect(shop.fake.state.requests.get().isEmpty, "nothing refused made us ask Stripe")
        #expect(try await ClaimSupport.record(shop.harness.client, store: "stripe", sale.lineItems[0]).status == 404)
        #expect(try await shop.count("SELECT count(*) AS n FROM store_notifications WHERE store = 'stripe'") == 0)
        // Another client's id, or none with a Stripe account: 404.
        let elsewhere = try await RawHTTP.request(
            port: shop.harness.client.port, method: "POST", path: "/v1/notifications/stripe/rgc_nobody",
            headers: genuine.headers, body: genuine.body)
        #expect(elsewhere.status == 404)
    }

    @Test func pricesAreRightInEveryKindOfMinorUnit() async throws {
        let shop = try await StripeShop.start()
        defer { shop.stop() }
        for (currency, minor, milliunits) in [("jpy", 500, 500_000), ("bhd", 1250, 1250), ("usd", 199, 1990)] {
            let sale = shop.fake.sale(player: "p", lines: [.init("prod_gems", unitAmount: minor)], currency: currency)
            #expect(
                try await shop.push(try shop.fake.webhook("checkout.session.completed", about: sale.session)).status
                    == 200)
            let record = try await ClaimSupport.record(shop.harness.client, store: "stripe", sale.lineItems[0])
            #expect(record.transaction["price_milliunits"] as? Int == milliunits, "\(currency): \(record.transaction)")
            #expect(record.transaction["currency"] as? String == currency.uppercased())
        }
    }

    @Test func refundsAndALostDisputeReachTheLedger() async throws {
        let shop = try await StripeShop.start()
        defer { shop.stop() }
        var sales: [FakeStripe.Sale] = []
        for _ in 0..<3 {
            let sale = shop.fake.sale(player: "p", lines: [.init("prod_gems", unitAmount: 300, quantity: 3)])
            #expect(
                try await shop.push(try shop.fake.webhook("checkout.session.completed", about: sale.session)).status
                    == 200)
            sales.append(sale)
        }
        shop.fake.refund(charge: sales[0].charge, amount: 300)
        #expect(try await shop.push(try shop.fake.webhook("charge.refunded", about: sales[0].charge)).status == 200)
        shop.fake.refund(charge: sales[1].charge)
        #expect(try await shop.push(try shop.fake.webhook("charge.refunded", about: sales[1].charge)).status == 200)
        let dispute = shop.fake.dispute(charge: sales[2].charge)
        #expect(try await shop.push(try shop.fake.webhook("charge.dispute.created", about: dispute)).status == 200)
        #expect(try await shop.state(sales[2].lineItems[0]) == "active", "a dispute revokes only by the policy")
        shop.fake.update(dispute) { $0["status"] = "lost" }
        #expect(try await shop.push(try shop.fake.webhook("charge.dispute.closed", about: dispute)).status == 200)
        try await OutboxDrain.wait(shop.harness.pool)

        let partial = try await ClaimSupport.record(shop.harness.client, store: "stripe", sales[0].lineItems[0])
        #expect(
            (partial.transaction["refund"] as? [String: Any])?["kind"] as? String == "partial", "\(partial.transaction)"
        )
        #expect(partial.transaction["state"] as? String == "active", "a partial refund keeps the purchase")
        let told = ClaimSupport.received(shop.receiver, "transaction.refunded", about: sales[0].lineItems[0])
        #expect(told.count == 1 && (told.first?["refund"] as? [String: Any])?["kind"] as? String == "partial")
        let full = try await ClaimSupport.record(shop.harness.client, store: "stripe", sales[1].lineItems[0])
        #expect(full.transaction["state"] as? String == "refunded")
        #expect((full.transaction["refund"] as? [String: Any])?["kind"] as? String == "full")
        let lost = try await ClaimSupport.record(shop.harness.client, store: "stripe", sales[2].lineItems[0])
        #expect(lost.transaction["state"] as? String == "revoked")
        #expect(lost.transaction["revocation_reason"] as? String == "chargeback")
        #expect(ClaimSupport.received(shop.receiver, "transaction.disputed", about: sales[2].lineItems[0]).count == 1)
    }

    @Test func aSubscriptionIsClaimedRenewedInGraceAndEnded() async throws {
        let shop = try await StripeShop.start()
        defer { shop.stop() }
        let subscribed = shop.fake.subscribe(player: "p-sub", product: "prod_pass", unitAmount: 499)
        #expect(
            try await shop.push(try shop.fake.webhook("checkout.session.completed", about: subscribed.session)).status
                == 200)
        try await OutboxDrain.wait(shop.harness.pool)
        #expect(ClaimSupport.received(shop.receiver, "entitlement.delivery", about: subscribed.firstInvoice).count == 1)
        #expect(try await shop.state(subscribed.firstInvoice) == "active")

        let renewal = shop.fake.nextPeriod(of: subscribed.subscription, paid: true)
        #expect(try await shop.push(try shop.fake.webhook("invoice.paid", about: renewal)).status == 200)
        #expect(try await shop.state(renewal) == "active")
        #expect(try await shop.subscriptionStatus(subscribed.subscription) == "active")

        let unpaid = shop.fake.nextPeriod(
            of: subscribed.subscription, paid: false, nextAttempt: shop.fake.unixNow + 3 * 86_400)
        #expect(
            try await shop.push(try shop.fake.webhook("customer.subscription.updated", about: subscribed.subscription))
                .status == 200)
        #expect(try await shop.subscriptionStatus(subscribed.subscription) == "grace_period")

        // Stripe gives up a week into the unpaid period and cancels the subscription.
        let unpaidStart = try #require(shop.fake.periodStart(of: unpaid))
        shop.fake.end(subscription: subscribed.subscription, at: unpaidStart + 7 * 86_400)
        #expect(
            try await shop.push(try shop.fake.webhook("customer.subscription.deleted", about: subscribed.subscription))
                .status == 200)
        #expect(try await shop.subscriptionStatus(subscribed.subscription) == "expired")
    }

    @Test func aWebAndAnAppStorePurchaseOfOneEntitlementKeepItWhenOneIsRefunded() async throws {
        let shop = try await StripeShop.start()
        defer { shop.stop() }
        for (store, product) in [("stripe", "prod_noads"), ("app_store", "noads.apple")] {
            let mapped = try await RawHTTP.request(
                port: shop.harness.service.port, method: "PUT",
                path: "/admin/clients/\(shop.harness.client.clientID)/products/\(store)/\(product)",
                headers: ["Authorization": "Bearer \(StripeShop.adminToken)", "Content-Type": "application/json"],
                body: Data(#"{"entitlements":["no_ads"]}"#.utf8))
            #expect(mapped.status == 200, "\(mapped.text)")
        }
        let sale = shop.fake.sale(player: "player-7", lines: [.init("prod_noads", unitAmount: 499)])
        #expect(
            try await shop.push(try shop.fake.webhook("checkout.session.completed", about: sale.session)).status == 200)
        let receipt = try shop.harness.pki.sign(
            AppleTestPKI.transaction([
                "transactionId": "2000000555555555", "productId": "noads.apple", "type": "Non-Consumable",
            ]))
        #expect(try await ClaimSupport.claim(shop.harness.client, receipt: receipt).status == 200)
        #expect(try await shop.owns("player-7", "no_ads"))
        shop.fake.refund(charge: sale.charge)
        #expect(try await shop.push(try shop.fake.webhook("charge.refunded", about: sale.charge)).status == 200)
        #expect(try await shop.state(sale.lineItems[0]) == "refunded")
        #expect(try await shop.owns("player-7", "no_ads"), "the App Store purchase still grants it")
    }

    @Test func verifyingASessionIdIsAFirstClaimThenADuplicateThenAConflict() async throws {
        let shop = try await StripeShop.start()
        defer { shop.stop() }
        let sale = shop.fake.sale(player: "player-7", lines: [.init("prod_gems", unitAmount: 199)])
        let first = try await ClaimSupport.claim(shop.harness.client, store: "stripe", receipt: sale.session)
        #expect(first.status == 200, "\(first.text)")
        #expect(try first.json()["duplicate"] as? Bool == false)
        let again = try await ClaimSupport.claim(shop.harness.client, store: "stripe", receipt: sale.session)
        #expect(try again.json()["duplicate"] as? Bool == true, "\(again.text)")
        var other = ClaimSupport.player
        other["player_id"] = "player-9"
        let conflict = try await ClaimSupport.claim(
            shop.harness.client, store: "stripe", receipt: sale.session, for: other)
        #expect(conflict.status == 200, "\(conflict.text)")
        #expect(!(try conflict.json()["first_claimed_by"] is NSNull), "\(conflict.text)")
        let unpaid = shop.fake.sale(player: "p", lines: [.init("prod_gems", unitAmount: 199)], paymentStatus: "unpaid")
        let refused = try await ClaimSupport.claim(shop.harness.client, store: "stripe", receipt: unpaid.session)
        #expect(refused.status == 422 && refused.text.contains("PAYMENT_NOT_COMPLETE"), "\(refused.text)")
    }

    @Test func aRefundedSessionIsVerifiedRefundedAndNotDelivered() async throws {
        let shop = try await StripeShop.start(reconciles: false)
        defer { shop.stop() }
        let sale = shop.fake.sale(player: "player-7", lines: [.init("prod_gems", unitAmount: 199)])
        shop.fake.refund(charge: sale.charge)
        let verified = try await ClaimSupport.claim(shop.harness.client, store: "stripe", receipt: sale.session)
        #expect(verified.status == 200, "\(verified.text)")
        let transaction = try verified.json()["transaction"] as? [String: Any]
        #expect(transaction?["state"] as? String == "refunded", "\(verified.text)")
        try await OutboxDrain.wait(shop.harness.pool)
        #expect(ClaimSupport.received(shop.receiver, "entitlement.delivery", about: sale.lineItems[0]).isEmpty)
        #expect(try await shop.state(sale.lineItems[0]) == "refunded")
    }

    @Test func aCheckoutEventAppliedAfterItsRefundRecordsItRefunded() async throws {
        let shop = try await StripeShop.start(reconciles: false)
        defer { shop.stop() }
        let sale = shop.fake.sale(player: "player-7", lines: [.init("prod_gems", unitAmount: 199)])
        let late = try shop.fake.webhook("checkout.session.completed", about: sale.session)
        shop.fake.refund(charge: sale.charge)
        let answer = try await shop.push(late)
        #expect(answer.status == 200, "\(answer.text)")
        try await OutboxDrain.wait(shop.harness.pool)
        #expect(try await shop.state(sale.lineItems[0]) == "refunded")
        #expect(ClaimSupport.received(shop.receiver, "entitlement.delivery", about: sale.lineItems[0]).isEmpty)
        let record = try await ClaimSupport.record(shop.harness.client, store: "stripe", sale.lineItems[0])
        #expect((record.transaction["claim"] as? [String: Any])?["player_id"] as? String == "player-7")
        #expect((record.transaction["refund"] as? [String: Any])?["kind"] as? String == "full", "\(record.transaction)")
    }

    @Test func theStoredRawBodyHoldsNoBuyersEmail() async throws {
        let shop = try await StripeShop.start()
        defer { shop.stop() }
        let sale = shop.fake.sale(player: "player-7", lines: [.init("prod_gems", unitAmount: 199)])
        let webhook = try shop.fake.webhook("checkout.session.completed", about: sale.session)
        #expect(String(decoding: webhook.body, as: UTF8.self).contains(FakeStripe.buyerEmail))
        #expect(try await shop.push(webhook).status == 200)
        // The same sale found by reconciliation is kept the same way.
        let polled = shop.fake.sale(player: "player-8", lines: [.init("prod_gems", unitAmount: 199)])
        shop.fake.event("checkout.session.completed", about: polled.session)
        _ = try await shop.harness.service.reconcile(store: .stripe, since: nil)
        #expect(try await shop.count("SELECT count(*) AS n FROM store_notifications WHERE store = 'stripe'") == 2)
        #expect(
            try await shop.count(
                """
                SELECT count(*) AS n FROM store_notifications WHERE store = 'stripe'
                AND (position(convert_to('jenny.rosen@example.com', 'UTF8') IN raw_body) > 0
                     OR decoded::text LIKE '%jenny.rosen@example.com%')
                """) == 0)
    }
}

/// The service with the Stripe provider pointed at a fake Stripe, and one client with the fake's
/// account, key and webhook secret, its webhooks and deliveries going to a receiver.
struct StripeShop {
    let harness: VerifyHarness
    let fake: FakeStripe
    let receiver: GooglePlayHarness.Receiver
    static let adminToken = String(repeating: "s", count: 40)

    static func start(reconciles: Bool = true) async throws -> StripeShop {
        let (fake, receiver) = (try FakeStripe(), try GooglePlayHarness.Receiver())
        let provider = StripeProvider(
            configuration: try fake.configuration(reconcileSeconds: reconciles ? 900 : 0), now: { fake.now })
        let hooks = "http://127.0.0.1:\(receiver.server.port)/hooks"
        let harness = try await VerifyHarness.start(
            outbox: VerifyHarness.fastOutbox(), adminToken: adminToken, webhookURL: hooks, deliveryURL: hooks,
            otherStores: [provider.registration])
        var settings = ClientSettings()
        settings.appIdentifiers = [StripeProvider.accountKind.name: [FakeStripe.account]]
        settings.sealedSettings = [
            StripeProvider.Setting.apiKey: FakeStripe.apiKey,
            StripeProvider.Setting.webhookSecret: FakeStripe.webhookSecret,
        ]
        _ = try await harness.service.clients.update(harness.client.clientID, settings)
        return StripeShop(harness: harness, fake: fake, receiver: receiver)
    }

    func stop() {
        harness.stop()
        ClaimSupport.stop(receiver)
        let fake = fake
        Task.detached { await fake.server.shutdown() }
    }

    /// Posts a webhook to the client's endpoint, as Stripe does.
    func push(_ webhook: FakeStripe.Webhook, headers: [String: String]? = nil) async throws -> RawHTTP.Response {
        try await RawHTTP.request(
            port: harness.client.port, method: "POST", path: "/v1/notifications/stripe/\(harness.client.clientID)",
            headers: headers ?? ["Content-Type": "application/json", "Stripe-Signature": webhook.signature],
            body: webhook.body)
    }

    func state(_ transactionID: String) async throws -> String? {
        try await harness.pool.query(
            "SELECT state FROM transactions WHERE store = 'stripe' AND transaction_id = \(transactionID)"
        ).first?.decode("state", as: String.self)
    }

    /// Whether `player` owns `entitlement` now (`GET /v1/players/{player}/entitlements`).
    func owns(_ player: String, _ entitlement: String) async throws -> Bool {
        let response = try await harness.client.get("/v1/players/\(player)/entitlements")
        let list = (try? response.json())?["entitlements"] as? [[String: Any]] ?? []
        return list.contains { $0["entitlement"] as? String == entitlement }
    }

    func subscriptionStatus(_ original: String) async throws -> String? {
        let response = try await harness.client.get("/v1/subscriptions/stripe/\(original)")
        return (try? response.json())?["status"] as? String
    }

    func count(_ sql: PostgresQuery) async throws -> Int {
        try await harness.pool.query(sql)[0].decode("n", as: Int.self)
    }
}
