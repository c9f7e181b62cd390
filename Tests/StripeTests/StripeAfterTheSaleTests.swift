import Foundation
import ReceiptCore
import Stripe
import StripeTestSupport
import Testing

/// What happens to a purchase after the sale, read back from Stripe: refunds, disputes,
/// subscriptions' periods, and events of connected accounts.
@Suite struct StripeAfterTheSaleTests {
    @Test func aFullRefundRefundsEveryLineTheChargePaidFor() async throws {
        let harness = try StripeHarness()
        let sale = harness.fake.sale(
            player: "p", lines: [.init("prod_gems", unitAmount: 500), .init("prod_vip", unitAmount: 500)])
        harness.fake.refund(charge: sale.charge)
        let webhook = try harness.fake.webhook("charge.refunded", about: sale.charge)
        let notifications = try await harness.receive(webhook)
        #expect(notifications.map(\.notificationID) == sale.lineItems.map { "\(webhook.id)/\($0)" })
        for notification in notifications {
            #expect(notification.event.kind == .refunded)
            #expect(notification.event.claimedBy == nil, "a refund never claims")
            let purchase = try #require(notification.event.purchase)
            #expect(purchase.revocationDate != nil)
            #expect(purchase.refund?.storeSaysPartial == false)
            #expect(purchase.refund?.isPartial(ofQuantity: purchase.quantity) == false)
        }
    }

    @Test func aPartialRefundSaysItsShare() async throws {
        let harness = try StripeHarness()
        let sale = harness.fake.sale(player: "p", lines: [.init("prod_gems", unitAmount: 300, quantity: 3)])
        harness.fake.refund(charge: sale.charge, amount: 300)
        let notifications = try await harness.receive(try harness.fake.webhook("charge.refunded", about: sale.charge))
        let purchase = try #require(notifications.first?.event.purchase)
        #expect(notifications.first?.event.kind == .refunded)
        #expect(purchase.refund?.storeSaysPartial == true)
        #expect(purchase.refund?.percentageMilliunits == 33_333)
    }

    @Test func aRefundEventTheChargeDoesNotShowIsIgnored() async throws {
        let harness = try StripeHarness()
        let sale = harness.fake.sale(player: "p", lines: [.init("prod_gems", unitAmount: 300)])
        let refused = await rejection {
            _ = try await harness.receive(try harness.fake.webhook("charge.refunded", about: sale.charge))
        }
        #expect(refused?.kind == .ignored)
        #expect(refused?.reason == "NOTHING_REFUNDED")
    }

    @Test(arguments: [false, true])
    func aDisputeIsNewsCarryingItsDetailAndTheClientsPolicy(_ revokes: Bool) async throws {
        let harness = try StripeHarness()
        let sale = harness.fake.sale(player: "p", lines: [.init("prod_gems", unitAmount: 1250)], currency: "jod")
        let dispute = harness.fake.dispute(charge: sale.charge, reason: "product_not_received")
        let owner = harness.fake.owner(revokeOnDispute: revokes)
        let opened = try await harness.receive(
            try harness.fake.webhook("charge.dispute.created", about: dispute), owner: owner)
        let event = try #require(opened.first?.event)
        #expect(event.kind == .disputed)
        #expect(
            event.dispute
                == DisputeNews(
                    id: dispute, reason: "product_not_received", amountMilliunits: 1250, currency: "JOD",
                    revokes: revokes))
        #expect(event.purchase?.transactionID == sale.lineItems[0])

        harness.fake.update(dispute) { $0["status"] = "won" }
        let won = try await harness.receive(
            try harness.fake.webhook("charge.dispute.closed", about: dispute), owner: owner)
        #expect(won.first?.event.kind == (revokes ? .refundReversed : .other))
    }

    @Test func aLostDisputeRevokesAsAChargeback() async throws {
        let harness = try StripeHarness()
        let sale = harness.fake.sale(player: "p", lines: [.init("prod_gems", unitAmount: 999)])
        let dispute = harness.fake.dispute(charge: sale.charge, status: "lost")
        let notifications = try await harness.receive(try harness.fake.webhook("charge.dispute.closed", about: dispute))
        let event = try #require(notifications.first?.event)
        #expect(event.kind == .revoked)
        #expect(event.purchase?.revocationReason == "chargeback")
        #expect(event.purchase?.revocationDate != nil)
    }

    @Test func aSubscriptionsFirstPeriodIsClaimedThenRenewedThenInGraceThenEnded() async throws {
        let harness = try StripeHarness()
        let subscribed = harness.fake.subscribe(player: "p-sub", product: "prod_pass", unitAmount: 499)
        let first = try await harness.receive(
            try harness.fake.webhook("checkout.session.completed", about: subscribed.session))
        let firstEvent = try #require(first.first?.event)
        #expect(first.map(\.notificationID).count == 1)
        #expect(firstEvent.kind == .subscribed)
        #expect(firstEvent.claimedBy == "p-sub")
        #expect(firstEvent.purchase?.transactionID == subscribed.firstInvoice)
        #expect(firstEvent.purchase?.originalTransactionID == subscribed.subscription)
        #expect(firstEvent.purchase?.productID == "prod_pass")
        #expect(firstEvent.purchase?.kind == .autoRenewableSubscription)
        #expect(firstEvent.purchase?.priceMilliunits == 4990)
        let firstEnd = try #require(firstEvent.purchase?.expiresDate)
        #expect(firstEnd > harness.fake.now)

        // The first invoice's own event is the same claim again.
        let paidFirst = try await harness.receive(
            try harness.fake.webhook("invoice.paid", about: subscribed.firstInvoice))
        #expect(paidFirst.first?.event.kind == .subscribed)
        #expect(paidFirst.first?.event.claimedBy == "p-sub")

        let renewal = harness.fake.nextPeriod(of: subscribed.subscription, paid: true)
        let renewed = try await harness.receive(try harness.fake.webhook("invoice.paid", about: renewal))
        let renewedEvent = try #require(renewed.first?.event)
        #expect(renewedEvent.kind == .renewed)
        #expect(renewedEvent.claimedBy == nil)
        #expect(renewedEvent.purchase?.transactionID == renewal)
        #expect(renewedEvent.purchase?.originalTransactionID == subscribed.subscription)
        #expect((renewedEvent.purchase?.expiresDate ?? .distantPast) > firstEnd)

        let retryAt = harness.fake.unixNow + 3 * 86_400
        let unpaid = harness.fake.nextPeriod(of: subscribed.subscription, paid: false, nextAttempt: retryAt)
        let pastDue = try await harness.receive(
            try harness.fake.webhook("customer.subscription.updated", about: subscribed.subscription))
        let graceEvent = try #require(pastDue.first?.event)
        #expect(graceEvent.kind == .billingIssue)
        #expect(graceEvent.purchase?.transactionID == unpaid)
        #expect(graceEvent.gracePeriodExpires == Date(timeIntervalSince1970: TimeInterval(retryAt)))

        harness.fake.end(subscription: subscribed.subscription)
        let ended = try await harness.receive(
            try harness.fake.webhook("customer.subscription.deleted", about: subscribed.subscription))
        #expect(ended.first?.event.kind == .expired)
        #expect(ended.first?.event.autoRenew == false)
    }

    @Test func aRefundedSubscriptionPeriodIsFoundThroughItsInvoice() async throws {
        let harness = try StripeHarness()
        let subscribed = harness.fake.subscribe(player: "p-sub", product: "prod_pass", unitAmount: 499)
        harness.fake.refund(charge: subscribed.charge)
        let webhook = try harness.fake.webhook("charge.refunded", about: subscribed.charge)
        let notifications = try await harness.receive(webhook)
        #expect(notifications.map(\.notificationID) == [webhook.id])
        #expect(notifications.first?.event.kind == .refunded)
        #expect(notifications.first?.event.purchase?.transactionID == subscribed.firstInvoice)
    }

    @Test func aConnectedAccountsEventIsReadAsThatAccountOnlyWhenItIsTheClients() async throws {
        let harness = try StripeHarness()
        let sale = harness.fake.sale(player: "p", lines: [.init("prod_gems", unitAmount: 199)])
        let foreign = await rejection {
            _ = try await harness.receive(
                try harness.fake.webhook("checkout.session.completed", about: sale.session, account: "acct_someoneElse")
            )
        }
        #expect(foreign?.kind == .ignored)
        #expect(foreign?.reason == "ACCOUNT_MISMATCH")
        #expect(harness.calls == 0)

        let own = try await harness.receive(
            try harness.fake.webhook("checkout.session.completed", about: sale.session, account: FakeStripe.account))
        #expect(own.count == 1)
        #expect(harness.fake.state.requests.get().allSatisfy { $0.account == FakeStripe.account })
    }

    @Test func anEventOfAnotherKindIsIgnoredWithoutAskingStripe() async throws {
        let harness = try StripeHarness()
        let sale = harness.fake.sale(player: "p", lines: [.init("prod_gems", unitAmount: 199)])
        let refused = await rejection {
            _ = try await harness.receive(try harness.fake.webhook("payment_intent.created", about: sale.paymentIntent))
        }
        #expect(refused?.kind == .ignored)
        #expect(harness.calls == 0)
    }

    @Test func stripeUnavailableMakesStripeSendTheEventAgain() async throws {
        let harness = try StripeHarness()
        let sale = harness.fake.sale(player: "p", lines: [.init("prod_gems", unitAmount: 199)])
        harness.fake.state.failuresFirst.set(["session": [503]])
        let refused = await rejection {
            _ = try await harness.receive(try harness.fake.webhook("checkout.session.completed", about: sale.session))
        }
        #expect(refused?.kind == .retryable)
    }
}
