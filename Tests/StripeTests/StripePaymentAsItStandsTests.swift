import Foundation
import ReceiptCore
import Stripe
import StripeTestSupport
import Testing

/// A session's `paid` says only that the money once arrived: a session is read with its payment
/// as it stands now (refunded, partly refunded, lost in a dispute), names its buyer, and leaves
/// nothing of the buyer's personal data in what is kept.
@Suite struct StripePaymentAsItStandsTests {
    @Test func aVerifiedSessionNamesItsBuyer() async throws {
        let harness = try StripeHarness()
        let named = harness.fake.sale(player: "player-7", lines: [.init("prod_gems", unitAmount: 199)])
        let purchases = try await harness.provider.verify(evidence: named.session, context: harness.context())
        #expect(purchases.map(\.buyer) == ["player-7"])
        let inMetadata = harness.fake.sale(
            player: nil, lines: [.init("prod_gems", unitAmount: 199)], metadataPlayer: "p-meta")
        let fromMetadata = try await harness.provider.verify(evidence: inMetadata.session, context: harness.context())
        #expect(fromMetadata.map(\.buyer) == ["p-meta"])
        let anonymous = harness.fake.sale(player: nil, lines: [.init("prod_gems", unitAmount: 199)])
        let unnamed = try await harness.provider.verify(evidence: anonymous.session, context: harness.context())
        #expect(unnamed.map(\.buyer) == [nil])
    }

    @Test func aSubscriptionsFirstPeriodNamesItsBuyerAndARenewalDoesNot() async throws {
        let harness = try StripeHarness()
        let subscribed = harness.fake.subscribe(player: "p-sub", product: "prod_pass", unitAmount: 499)
        let verified = try await harness.provider.verify(evidence: subscribed.session, context: harness.context())
        #expect(verified.map(\.buyer) == ["p-sub"])
        for (type, object) in [
            ("checkout.session.completed", subscribed.session), ("invoice.paid", subscribed.firstInvoice),
            ("customer.subscription.created", subscribed.subscription),
        ] {
            let told = try await harness.receive(try harness.fake.webhook(type, about: object))
            #expect(told.first?.event.purchase?.buyer == "p-sub", "\(type)")
        }
        let renewal = harness.fake.nextPeriod(of: subscribed.subscription, paid: true)
        let renewed = try await harness.receive(try harness.fake.webhook("invoice.paid", about: renewal))
        #expect(renewed.first?.event.purchase?.buyer == nil)
    }

    @Test func aRefundedSessionIsVerifiedRefundedNotPaid() async throws {
        let harness = try StripeHarness()
        let sale = harness.fake.sale(
            player: "p", lines: [.init("prod_gems", unitAmount: 500), .init("prod_vip", unitAmount: 500)])
        harness.fake.refund(charge: sale.charge, reason: "fraudulent")
        let refunds = (harness.fake.object(sale.charge)?["refunds"] as? [String: Any])?["data"] as? [[String: Any]]
        let refundedAt = try #require(refunds?.first?["created"] as? Int)
        let purchases = try await harness.provider.verify(evidence: sale.session, context: harness.context())
        #expect(purchases.count == 2)
        for purchase in purchases {
            #expect(purchase.revocationDate == Date(timeIntervalSince1970: TimeInterval(refundedAt)))
            #expect(purchase.revocationReason == "fraudulent")
            #expect(purchase.refund?.storeSaysPartial == false)
            #expect(purchase.refund?.percentageMilliunits == 100_000)
            #expect(LedgerRules.state(of: purchase, at: harness.fake.now) == .refunded)
        }
        let asked = harness.fake.state.requests.get().first { $0.path.hasPrefix("/v1/checkout/sessions/cs_") }
        #expect(asked?.query.contains { $0 == ("expand[]", "payment_intent.latest_charge.refunds") } == true)
    }

    @Test func aSubscriptionsSessionIsReadWithItsFirstInvoicesCharge() async throws {
        let harness = try StripeHarness()
        let paid = harness.fake.subscribe(player: "p-sub", product: "prod_pass", unitAmount: 499)
        let active = try #require(
            try await harness.provider.verify(evidence: paid.session, context: harness.context()).first)
        #expect(active.revocationDate == nil && active.refund == nil)
        let refunded = harness.fake.subscribe(player: "p-sub", product: "prod_pass", unitAmount: 499)
        harness.fake.refund(charge: refunded.charge)
        let purchase = try #require(
            try await harness.provider.verify(evidence: refunded.session, context: harness.context()).first)
        #expect(purchase.transactionID == refunded.firstInvoice)
        #expect(purchase.revocationDate != nil)
        #expect(purchase.refund?.storeSaysPartial == false)
        let event = try await harness.receive(
            try harness.fake.webhook("checkout.session.completed", about: refunded.session))
        #expect(event.first?.event.kind == .refunded)
        #expect(event.first?.event.claimedBy == "p-sub")
    }

    @Test func aPartlyRefundedSessionIsKeptWithItsShare() async throws {
        let harness = try StripeHarness()
        let sale = harness.fake.sale(player: "p", lines: [.init("prod_gems", unitAmount: 250, quantity: 4)])
        harness.fake.refund(charge: sale.charge, amount: 250)
        let purchase = try #require(
            try await harness.provider.verify(evidence: sale.session, context: harness.context()).first)
        #expect(purchase.revocationDate == nil)
        #expect(purchase.refund?.storeSaysPartial == true)
        #expect(purchase.refund?.percentageMilliunits == 25_000)
        #expect(LedgerRules.state(of: purchase, at: harness.fake.now) == .active)
    }

    @Test func aSessionWhosePaymentWasLostInADisputeIsAChargeback() async throws {
        let harness = try StripeHarness()
        let sale = harness.fake.sale(player: "p", lines: [.init("prod_gems", unitAmount: 999)])
        harness.fake.dispute(charge: sale.charge, status: "needs_response")
        let open = try #require(
            try await harness.provider.verify(evidence: sale.session, context: harness.context()).first)
        #expect(open.revocationDate == nil, "an open dispute is not yet lost")
        let lostSale = harness.fake.sale(player: "p", lines: [.init("prod_gems", unitAmount: 999)])
        harness.fake.dispute(charge: lostSale.charge, status: "lost")
        let lost = try #require(
            try await harness.provider.verify(evidence: lostSale.session, context: harness.context()).first)
        #expect(lost.revocationDate != nil)
        #expect(lost.revocationReason == "chargeback")
        let event = try await harness.receive(
            try harness.fake.webhook("checkout.session.completed", about: lostSale.session))
        #expect(event.first?.event.kind == .revoked)
    }

    @Test func aCheckoutEventReadAfterItsRefundIsTheRefundStillClaimedByItsBuyer() async throws {
        let harness = try StripeHarness()
        let sale = harness.fake.sale(player: "player-7", lines: [.init("prod_gems", unitAmount: 300)])
        let webhook = try harness.fake.webhook("checkout.session.completed", about: sale.session)
        harness.fake.refund(charge: sale.charge)
        let notifications = try await harness.receive(webhook)
        let event = try #require(notifications.first?.event)
        #expect(event.kind == .refunded)
        #expect(event.claimedBy == "player-7", "the sale's buyer claims it, refunded as it is")
        #expect(event.purchase?.revocationDate != nil)
        #expect(event.purchase?.refund?.storeSaysPartial == false)

        let partial = harness.fake.sale(player: "player-7", lines: [.init("prod_gems", unitAmount: 300, quantity: 2)])
        harness.fake.refund(charge: partial.charge, amount: 300)
        let kept = try await harness.receive(
            try harness.fake.webhook("checkout.session.completed", about: partial.session))
        #expect(kept.first?.event.kind == .partiallyRefunded)
        #expect(kept.first?.event.purchase?.refund?.percentageMilliunits == 50_000)
    }

    @Test(arguments: [false, true])
    func aDisputeRevokedByThePolicyCarriesItsDateAndReason(_ revokes: Bool) async throws {
        let harness = try StripeHarness()
        let sale = harness.fake.sale(player: "p", lines: [.init("prod_gems", unitAmount: 700)])
        let dispute = harness.fake.dispute(charge: sale.charge)
        let created = try #require(harness.fake.object(dispute)?["created"] as? Int)
        let opened = try await harness.receive(
            try harness.fake.webhook("charge.dispute.created", about: dispute),
            owner: harness.fake.owner(revokeOnDispute: revokes))
        let purchase = try #require(opened.first?.event.purchase)
        #expect(purchase.revocationDate == (revokes ? Date(timeIntervalSince1970: TimeInterval(created)) : nil))
        #expect(purchase.revocationReason == (revokes ? "dispute" : nil))
    }

    @Test func whatIsKeptOfAnEventNamesNoBuyersPersonalData() async throws {
        let harness = try StripeHarness()
        let sale = harness.fake.sale(player: "p", lines: [.init("prod_gems", unitAmount: 199)])
        let webhook = try harness.fake.webhook("checkout.session.completed", about: sale.session)
        #expect(String(decoding: webhook.body, as: UTF8.self).contains(FakeStripe.buyerEmail))
        let notifications = try await harness.receive(webhook)
        for notification in notifications {
            let raw = String(decoding: try #require(notification.rawBody), as: UTF8.self)
            #expect(raw.contains(webhook.id))
            for personal in [FakeStripe.buyerEmail, "Jenny Rosen", "Main Street", "Dublin"] {
                #expect(!raw.contains(personal))
                #expect(!String(decoding: notification.decodedJSON, as: UTF8.self).contains(personal))
            }
        }
    }
}
