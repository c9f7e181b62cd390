import Foundation
import ReceiptCore
import Stripe
import StripeTestSupport
import Testing

/// A paid Checkout Session's line items are purchases of their products, claimed for the
/// session's player, priced in milliunits from Stripe's minor units.
@Suite struct StripeCheckoutTests {
    @Test func eachLineItemIsAPurchaseOfItsProductClaimedByTheSessionsPlayer() async throws {
        let harness = try StripeHarness()
        let sale = harness.fake.sale(
            player: "player-7",
            lines: [.init("prod_gems", unitAmount: 199, quantity: 3), .init("prod_vip", unitAmount: 999)])
        let webhook = try harness.fake.webhook("checkout.session.completed", about: sale.session)
        let notifications = try await harness.receive(webhook)
        #expect(notifications.map(\.notificationID) == sale.lineItems.map { "\(webhook.id)/\($0)" })
        let gems = try #require(notifications.first?.event)
        #expect(gems.kind == .oneTimeCharge)
        #expect(gems.claimedBy == "player-7")
        let purchase = try #require(gems.purchase)
        #expect(purchase.transactionID == sale.lineItems[0])
        #expect(purchase.orderID == sale.paymentIntent)
        #expect(purchase.productID == "prod_gems")
        #expect(purchase.quantity == 3)
        #expect(purchase.priceMilliunits == 1990)
        #expect(purchase.currency == "USD")
        #expect(purchase.environment == .sandbox)
        #expect(purchase.appIdentifier == FakeStripe.account)
        #expect(notifications.allSatisfy { $0.clientID == "client-stripe" })
        #expect(purchase.storefront == "IE", "the buyer's address on the session: where the sale is taxed")
        #expect(purchase.externalPurchaseToken == nil)
        // Every call pinned the version and used the client's key.
        let requests = harness.fake.state.requests.get()
        #expect(requests.allSatisfy { $0.version == "2025-03-31.basil" })
        #expect(requests.allSatisfy { $0.authorization == "Bearer \(FakeStripe.apiKey)" })
        #expect(requests.allSatisfy { $0.account == nil })
    }

    @Test func anAppStoresTokenInTheMetadataTravelsWithEveryLine() async throws {
        let harness = try StripeHarness()
        let sale = harness.fake.sale(
            player: "player-7", lines: [.init("prod_gems", unitAmount: 199), .init("prod_vip", unitAmount: 999)],
            metadata: ["external_purchase_token": "eyJleHRlcm5hbCI6dHJ1ZX0"])
        let notifications = try await harness.receive(
            try harness.fake.webhook("checkout.session.completed", about: sale.session))
        #expect(notifications.count == 2)
        #expect(notifications.allSatisfy { $0.event.purchase?.externalPurchaseToken == "eyJleHRlcm5hbCI6dHJ1ZX0" })
    }

    @Test func thePlayerMayBeNamedInMetadata() async throws {
        let harness = try StripeHarness()
        let sale = harness.fake.sale(
            player: nil, lines: [.init("prod_gems", unitAmount: 199)], metadataPlayer: "p-meta")
        let notifications = try await harness.receive(
            try harness.fake.webhook("checkout.session.async_payment_succeeded", about: sale.session))
        #expect(notifications.first?.event.claimedBy == "p-meta")
    }

    @Test(arguments: [
        ("usd", 199, Int64(1990)), ("jpy", 500, Int64(500_000)), ("krw", 1200, Int64(1_200_000)),
        ("bhd", 1250, Int64(1250)), ("kwd", 3500, Int64(3500)), ("eur", 5, Int64(50)),
    ])
    func amountsAreConvertedFromTheCurrencysMinorUnit(
        _ currency: String, _ minor: Int, _ milliunits: Int64
    )
        async throws
    {
        let harness = try StripeHarness()
        let sale = harness.fake.sale(player: "p", lines: [.init("prod_gems", unitAmount: minor)], currency: currency)
        let purchases = try await harness.provider.verify(evidence: sale.session, context: harness.context())
        #expect(purchases.first?.priceMilliunits == milliunits)
        #expect(purchases.first?.currency == currency.uppercased())
    }

    @Test func aLiveSessionIsProduction() async throws {
        let harness = try StripeHarness()
        let sale = harness.fake.sale(player: "p", lines: [.init("prod_gems", unitAmount: 199)], livemode: true)
        let purchases = try await harness.provider.verify(evidence: sale.session, context: harness.context())
        #expect(purchases.map(\.environment) == [.production])
    }

    @Test func verifyingASessionReturnsEveryLineItem() async throws {
        let harness = try StripeHarness()
        let sale = harness.fake.sale(
            player: "p", lines: [.init("prod_gems", unitAmount: 199), .init("prod_vip", unitAmount: 999)])
        let purchases = try await harness.provider.verify(evidence: sale.session, context: harness.context())
        #expect(purchases.map(\.transactionID) == sale.lineItems)
        #expect(purchases.map(\.productID) == ["prod_gems", "prod_vip"])
    }

    @Test func anUnpaidSessionIsRefusedAndItsWebhookIgnored() async throws {
        let harness = try StripeHarness()
        let sale = harness.fake.sale(
            player: "p", lines: [.init("prod_gems", unitAmount: 199)], paymentStatus: "unpaid")
        let refused = await verificationError {
            _ = try await harness.provider.verify(evidence: sale.session, context: harness.context())
        }
        #expect(refused?.code == .verificationFailed)
        #expect(refused?.reason == "PAYMENT_NOT_COMPLETE")
        let ignored = await rejection {
            _ = try await harness.receive(try harness.fake.webhook("checkout.session.completed", about: sale.session))
        }
        #expect(ignored?.kind == .ignored)
        #expect(harness.fake.state.hits.get()["line_items"] == nil, "nothing unpaid is read further")
    }

    @Test func evidenceThatIsNoSessionIdIsRefusedWithoutAskingStripe() async throws {
        let harness = try StripeHarness()
        for evidence in ["pi_123", "cs_../../v1/charges", ""] {
            let refused = await verificationError {
                _ = try await harness.provider.verify(evidence: evidence, context: harness.context())
            }
            #expect(refused?.reason == "MALFORMED_RECEIPT")
        }
        #expect(harness.calls == 0)
        #expect(StripeProvider.declaration.recognizesEvidence("cs_test_a1b2"))
        #expect(!StripeProvider.declaration.recognizesEvidence("GPA.1234"))
        #expect(StripeProvider.declaration.operatingSystems == [.web])
    }

    @Test func aSessionStripeDoesNotKnowIsRefused() async throws {
        let harness = try StripeHarness()
        let refused = await verificationError {
            _ = try await harness.provider.verify(evidence: "cs_test_unknown", context: harness.context())
        }
        #expect(refused?.code == .verificationFailed)
        #expect(refused?.reason == "PURCHASE_NOT_FOUND")
    }

    @Test func aRefusedKeyIsTheVerifiersTrouble() async throws {
        let harness = try StripeHarness()
        let sale = harness.fake.sale(player: "p", lines: [.init("prod_gems", unitAmount: 199)])
        harness.fake.state.keys.set([])
        let refused = await verificationError {
            _ = try await harness.provider.verify(evidence: sale.session, context: harness.context())
        }
        #expect(refused?.code == .verifierError)
        #expect(refused?.reason == "STRIPE_KEY_REFUSED")
        #expect(refused?.isRetryable == false)
    }

    @Test func aRateLimitIsRetryableAndSaysHowLongToWait() async throws {
        let harness = try StripeHarness(retries: 2)
        let sale = harness.fake.sale(player: "p", lines: [.init("prod_gems", unitAmount: 199)])
        harness.fake.state.retryAfterSeconds.set(120)
        harness.fake.state.failuresFirst.set(["session": [429, 429]])
        let refused = await verificationError {
            _ = try await harness.provider.verify(evidence: sale.session, context: harness.context())
        }
        #expect(refused?.code == .verifierError)
        #expect(refused?.isRetryable == true)
        // A Retry-After past what the client waits is passed on, not slept through.
        #expect(harness.fake.state.hits.get()["session"] == 1)
        // One 429 with a short wait is retried.
        harness.fake.state.retryAfterSeconds.set(1)
        harness.fake.state.failuresFirst.set(["session": [429]])
        let purchases = try await harness.provider.verify(evidence: sale.session, context: harness.context())
        #expect(purchases.count == 1)
    }
}
