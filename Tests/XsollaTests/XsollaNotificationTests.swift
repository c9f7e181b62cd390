import Foundation
import ReceiptCore
import Testing
import Xsolla
import XsollaTestSupport

/// Xsolla's webhooks, signed as Xsolla signs them, as the provider reads them and answers them.
@Suite struct XsollaWebhooks {
    let provider = XsollaFixtures.provider(now: { Date(timeIntervalSince1970: 1_796_000_000) })

    @Test func aPaymentIsClaimedByItsPlayer() async throws {
        let result = await XsollaFixtures.receive(
            provider, try FakeXsolla.payment(transactionID: 800_001, player: "player-42", items: [("gems.500", 2)]))
        let notification = try #require(result.notifications.first)
        #expect(result.notifications.count == 1)
        #expect(notification.notificationID == "payment:800001/gems.500", "one item is named by its SKU too")
        #expect(notification.type == "payment" && notification.environment == .production)
        #expect(notification.appIdentifier == FakeXsolla.projectID)
        #expect(notification.event.kind == .oneTimeCharge)
        #expect(notification.event.claimedBy == "player-42")
        let purchase = try #require(notification.event.purchase)
        #expect(
            purchase.transactionID == "800001/gems.500" && purchase.productID == "gems.500" && purchase.quantity == 2)
        #expect(purchase.buyer == "player-42", "the store's own record names the buyer")
        #expect(purchase.priceMilliunits == 4995 && purchase.currency == "USD", "9.99 for two: 4.995 each")
        let kept = String(decoding: notification.decodedJSON, as: UTF8.self)
        #expect(!kept.contains("player@example.com") && !kept.contains("18777976552"), "contact details are not kept")
        let raw = String(decoding: try #require(notification.rawBody), as: UTF8.self)
        #expect(raw == kept, "the stored raw body is the trimmed one")
        #expect(!raw.contains("player@example.com") && raw.contains("player-42"))
        #expect(result.answer == NotificationAnswer(status: 204))
        #expect(purchase.externalPurchaseToken == nil && purchase.storefront == "US", "the buyer's country")
    }

    @Test func anAppStoresTokenInTheCustomParametersTravelsWithTheSale() async throws {
        let result = await XsollaFixtures.receive(
            provider,
            try FakeXsolla.payment(
                transactionID: 800_009, player: "player-42",
                customParameters: ["external_purchase_token": "eyJleHRlcm5hbCI6dHJ1ZX0"]))
        let purchase = try #require(result.notifications.first?.event.purchase)
        #expect(purchase.externalPurchaseToken == "eyJleHRlcm5hbCI6dHJ1ZX0")
    }

    @Test func aPaymentKeepsWhatTheBuyerPaidAndTheVATWithinIt() async throws {
        let result = await XsollaFixtures.receive(
            provider,
            try FakeXsolla.payment(
                transactionID: 800_010, player: "player-42", amount: 12.30, currency: "EUR", vat: (2.30, 23)))
        let purchase = try #require(result.notifications.first?.event.purchase)
        #expect(purchase.paidMilliunits == 12_300 && purchase.currency == "EUR")
        #expect(purchase.taxMilliunits == 2_300, "the VAT, and no sales tax")
        let untaxed = await XsollaFixtures.receive(
            provider, try FakeXsolla.payment(transactionID: 800_011, player: "player-42"))
        #expect(untaxed.notifications.first?.event.purchase?.taxMilliunits == nil, "no tax said, none assumed")
    }

    @Test func aWebShopOrderOfTwoSKUsIsTwoPurchases() async throws {
        let webhook = try FakeXsolla.order(
            orderID: 55, transactionID: 800_002, player: "player-7",
            items: [("sword", 1, "4.99"), ("shield", 2, "6.00")])
        let result = await XsollaFixtures.receive(provider, webhook)
        #expect(result.notifications.map(\.notificationID) == ["order_paid:800002/sword", "order_paid:800002/shield"])
        #expect(result.notifications.allSatisfy { $0.event.claimedBy == "player-7" && $0.event.kind == .oneTimeCharge })
        let shield = try #require(result.notifications.last?.event.purchase)
        #expect(shield.transactionID == "800002/shield" && shield.orderID == "55" && shield.productID == "shield")
        #expect(shield.quantity == 2 && shield.priceMilliunits == 3000 && shield.currency == "USD")
        #expect(shield.kind == nil, "a virtual good may be kept: Xsolla does not say it is used up")
        #expect(result.notifications.first?.appIdentifier == FakeXsolla.projectID, "from billing.settings")
    }

    @Test func anOlderProjectsOrderNamesItsTransactionAsTheInvoice() async throws {
        let webhook = try FakeXsolla.order(
            orderID: 56, transactionID: 800_003, player: "player-7", items: [("sword", 1, "4.99")], billing: false)
        let result = await XsollaFixtures.receive(provider, webhook)
        let purchase = try #require(result.notifications.first?.event.purchase)
        #expect(purchase.transactionID == "800003/sword" && purchase.productID == "sword")
        #expect(purchase.buyer == "player-7", "user.external_id")
        #expect(result.notifications.first?.appIdentifier == FakeXsolla.projectID, "the URL's client's project")
    }

    @Test func aPaymentThatListsNoItemLeavesItToTheOrderWebhook() async throws {
        let result = await XsollaFixtures.receive(
            provider, try FakeXsolla.payment(transactionID: 800_004, player: "player-7", items: []))
        #expect(result.refusal?.kind == .ignored)
        #expect(result.answer == NotificationAnswer(status: 204))
    }

    @Test func aRefundRevokesThePurchase() async throws {
        let result = await XsollaFixtures.receive(
            provider,
            try FakeXsolla.payment(transactionID: 800_001, player: "player-42", type: "refund", refundCode: 2))
        let notification = try #require(result.notifications.first)
        #expect(notification.notificationID == "refund:800001/gems.100")
        #expect(notification.event.kind == .refunded && notification.event.claimedBy == nil)
        let purchase = try #require(notification.event.purchase)
        #expect(purchase.transactionID == "800001/gems.100", "the id the payment recorded")
        #expect(purchase.revocationDate == Date(timeIntervalSince1970: 1_796_000_000))
        #expect(purchase.revocationReason == "chargeback" && purchase.revocationReasonCode == 2)
        #expect(purchase.refund?.storeSaysPartial == false)
    }

    @Test func aPartialRefundIsAPartialRefundAndEachIsItsOwnNews() async throws {
        let first = await XsollaFixtures.receive(
            provider,
            try FakeXsolla.payment(
                transactionID: 800_001, player: "player-42", amount: 9.99, type: "partial_refund", refundCode: 1))
        let second = await XsollaFixtures.receive(
            provider,
            try FakeXsolla.payment(
                transactionID: 800_001, player: "player-42", amount: 5.00, type: "partial_refund", refundCode: 1))
        let notification = try #require(first.notifications.first)
        #expect(notification.event.kind == .partiallyRefunded, "the buyer keeps the purchase")
        #expect(notification.event.purchase?.revocationDate == nil)
        #expect(notification.event.purchase?.refund?.storeSaysPartial == true)
        #expect(notification.event.purchase?.refund?.isPartial(ofQuantity: 1) == true)
        #expect(notification.notificationID.hasPrefix("partial_refund:800001/gems.100:"))
        #expect(second.notifications.first?.notificationID != notification.notificationID)
    }

    @Test func anOrderCanceledRefundsEachItem() async throws {
        let webhook = try FakeXsolla.order(
            "order_canceled", orderID: 55, transactionID: 800_002, player: "player-7",
            items: [("sword", 1, "4.99"), ("shield", 2, "6.00")])
        let result = await XsollaFixtures.receive(provider, webhook)
        #expect(
            result.notifications.map(\.notificationID) == [
                "order_canceled:800002/sword", "order_canceled:800002/shield",
            ])
        #expect(result.notifications.allSatisfy { $0.event.kind == .refunded && $0.event.claimedBy == nil })
        #expect(result.notifications.first?.event.purchase?.revocationReasonCode == 1)
    }

    @Test func sandboxPaymentsAreTheSandbox() async throws {
        let payment = await XsollaFixtures.receive(
            provider, try FakeXsolla.payment(transactionID: 800_005, player: "p", dryRun: true))
        #expect(payment.notifications.first?.environment == .sandbox)
        #expect(payment.notifications.first?.event.purchase?.environment == .sandbox)
        let order = await XsollaFixtures.receive(
            provider,
            try FakeXsolla.order(
                orderID: 57, transactionID: 800_006, player: "p", items: [("sword", 1, "1")], sandbox: true,
                billing: false))
        #expect(order.notifications.first?.environment == .sandbox, "order.mode sandbox")
    }

    @Test func anotherProjectsWebhookIsRefused() async throws {
        let result = await XsollaFixtures.receive(
            provider, try FakeXsolla.payment(transactionID: 800_007, player: "p", project: "99999"))
        #expect(result.notifications.isEmpty && result.refusal?.kind == .malformed)
        #expect(result.answer?.status == 400 && XsollaFixtures.code(result.answer) == "INVALID_PARAMETER")
        let order = await XsollaFixtures.receive(
            provider,
            try FakeXsolla.order(orderID: 58, transactionID: 800_008, player: "p", items: [("a", 1, "1")], project: "1")
        )
        #expect(order.refusal?.kind == .malformed, "billing.settings.project_id is checked too")
    }

    @Test func aWebhookWithoutAProjectIdIsTheURLsClients() async throws {
        let result = await XsollaFixtures.receive(
            provider, try FakeXsolla.payment(transactionID: 800_009, player: "p", project: nil))
        #expect(result.notifications.first?.appIdentifier == FakeXsolla.projectID)
    }

    @Test func userValidationAcceptsAWellFormedPlayerAndRecordsNothing() async throws {
        let result = await XsollaFixtures.receive(provider, try FakeXsolla.userValidation(player: "player-1"))
        #expect(result.notifications.isEmpty && result.refusal?.kind == .ignored)
        #expect(result.answer == NotificationAnswer(status: 204))
        let bad = await XsollaFixtures.receive(provider, try FakeXsolla.userValidation(player: "bad\u{0}player"))
        #expect(bad.answer?.status == 400 && XsollaFixtures.code(bad.answer) == "INVALID_USER")
    }

    @Test func userValidationWithKnownPlayersOnlyAsksWhetherTheClientKnowsThePlayer() async throws {
        let client = XsollaFixtures.client(knownPlayersOnly: true)
        let known = await XsollaFixtures.receive(
            provider, try FakeXsolla.userValidation(player: "known-1"), client: client, knownPlayers: ["known-1"])
        #expect(known.refusal?.kind == .ignored && known.answer == NotificationAnswer(status: 204))
        let stranger = await XsollaFixtures.receive(
            provider, try FakeXsolla.userValidation(player: "stranger"), client: client, knownPlayers: ["known-1"])
        #expect(stranger.answer?.status == 400 && XsollaFixtures.code(stranger.answer) == "INVALID_USER")
    }

    @Test func subscriptionWebhooksFollowTheSubscription() async throws {
        let created = await XsollaFixtures.receive(
            provider,
            try FakeXsolla.subscription(
                "create_subscription", subscriptionID: "10", player: "p", nextCharge: "2027-01-01T10:00:00+00:00"))
        let subscribed = try #require(created.notifications.first)
        #expect(subscribed.event.kind == .subscribed && subscribed.event.autoRenew == true)
        #expect(subscribed.event.purchase?.originalTransactionID == "subscription-10")
        #expect(subscribed.event.purchase?.productID == "vip.monthly")
        #expect(subscribed.event.purchase?.kind == .autoRenewableSubscription)
        let renewed = await XsollaFixtures.receive(
            provider,
            try FakeXsolla.subscription(
                "update_subscription", subscriptionID: "10", player: "p", nextCharge: "2027-02-01T10:00:00+00:00"))
        #expect(renewed.notifications.first?.event.kind == .renewed)
        #expect(renewed.notifications.first?.notificationID != subscribed.notificationID, "a new period is new news")
        let stops = await XsollaFixtures.receive(
            provider,
            try FakeXsolla.subscription(
                "non_renewal_subscription", subscriptionID: "10", player: "p", end: "2027-02-01T10:00:00+00:00"))
        #expect(stops.notifications.first?.event.kind == .renewalStatusChanged)
        #expect(stops.notifications.first?.event.autoRenew == false)
        let canceledLater = await XsollaFixtures.receive(
            provider,
            try FakeXsolla.subscription(
                "cancel_subscription", subscriptionID: "10", player: "p", end: "2027-02-01T10:00:00+00:00"))
        #expect(canceledLater.notifications.first?.event.kind == .renewalStatusChanged)
        let canceledNow = await XsollaFixtures.receive(
            provider,
            try FakeXsolla.subscription(
                "cancel_subscription", subscriptionID: "10", player: "p", end: "2026-11-01T10:00:00+00:00"))
        #expect(canceledNow.notifications.first?.event.kind == .expired)
    }

    @Test func aSubscriptionsPaymentIsAPeriodOfIt() async throws {
        let result = await XsollaFixtures.receive(
            provider,
            try FakeXsolla.payment(
                transactionID: 800_010, player: "p", items: [],
                subscription: [
                    "plan_id": "vip.monthly", "subscription_id": "10", "product_id": "VIP",
                    "date_create": "2026-12-01T10:00:00+00:00", "date_next_charge": "2027-01-01T10:00:00+00:00",
                    "currency": "USD", "amount": 9.99,
                ]))
        let notification = try #require(result.notifications.first)
        #expect(notification.event.kind == .renewed && notification.event.claimedBy == "p")
        #expect(notification.event.purchase?.originalTransactionID == "subscription-10")
        #expect(notification.event.purchase?.transactionID == "800010")
        #expect(notification.event.purchase?.expiresDate == Date(timeIntervalSince1970: 1_798_797_600))
    }

    @Test func otherTypesAreTakenAndRecordNothing() async throws {
        let webhook = try FakeXsolla.signed([
            "notification_type": "user_balance_operation", "settings": FakeXsolla.settings(FakeXsolla.projectID),
        ])
        let result = await XsollaFixtures.receive(provider, webhook)
        #expect(result.refusal?.kind == .ignored && result.answer == NotificationAnswer(status: 204))
    }

    @Test func aSignedBodyThatIsNotAWebhookIsAnInvalidParameter() async throws {
        let result = await XsollaFixtures.receive(provider, try FakeXsolla.signed(["hello": "world"]))
        #expect(result.refusal?.kind == .malformed)
        #expect(result.answer?.status == 400 && XsollaFixtures.code(result.answer) == "INVALID_PARAMETER")
    }

    /// Xsolla does not send a 400 again and the money is taken: the purchase is recorded, for
    /// nobody, whatever the player id; user validation still refuses such an id.
    @Test func aPaymentWhosePlayerIdCannotBeHeldIsRecordedUnclaimed() async throws {
        for player in ["", "bad\u{0}player", String(repeating: "p", count: 500)] {
            let result = await XsollaFixtures.receive(
                provider, try FakeXsolla.payment(transactionID: 800_011, player: player))
            let notification = try #require(result.notifications.first, "\(player.count)")
            #expect(result.refusal == nil && result.answer == NotificationAnswer(status: 204))
            #expect(notification.event.kind == .oneTimeCharge && notification.event.claimedBy == nil)
            #expect(notification.event.purchase?.buyer == nil)
        }
        let validation = await XsollaFixtures.receive(provider, try FakeXsolla.userValidation(player: "bad\u{0}player"))
        #expect(XsollaFixtures.code(validation.answer) == "INVALID_USER")
    }

    /// The subscription webhooks carry no test flag (settings, user, subscription only): they are
    /// the production ledger's unless the body says otherwise.
    @Test func subscriptionWebhooksAreProductionUnlessTheyCarryATestFlag() async throws {
        let plain = await XsollaFixtures.receive(
            provider, try FakeXsolla.subscription("create_subscription", subscriptionID: "11", player: "p"))
        #expect(plain.notifications.first?.environment == .production)
    }

    @Test func everyOutcomeIsAnsweredAsXsollaReadsIt() {
        #expect(provider.answer(to: .accepted(duplicate: false)) == NotificationAnswer(status: 204))
        #expect(provider.answer(to: .accepted(duplicate: true)) == NotificationAnswer(status: 204))
        let unknown = provider.answer(to: .unknownClient)
        #expect(unknown?.status == 404 && XsollaFixtures.code(unknown) == "INVALID_PARAMETER")
        let unavailable = provider.answer(to: .unavailable)
        #expect(unavailable?.status == 500 && XsollaFixtures.code(unavailable) == "SERVER_ERROR")
        #expect(unavailable?.contentType == "application/json")
        let retry = provider.answer(to: .refused(NotificationRejection(.retryable, reason: "X", message: "later")))
        #expect(retry?.status == 500, "Xsolla sends a webhook again only after a 5xx")
    }
}
