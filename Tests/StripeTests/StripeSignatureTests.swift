import Foundation
import ReceiptCore
import Stripe
import StripeTestSupport
import Testing

/// The webhook's signature is Stripe's scheme, checked before anything in the body is believed:
/// a forged, tampered, stale or missing one is answered 400 and makes no call to Stripe.
@Suite struct StripeSignatureTests {
    @Test func aSignedEventIsReadBackAndAccepted() async throws {
        let harness = try StripeHarness()
        let sale = harness.fake.sale(player: "player-1", lines: [.init("prod_gems", unitAmount: 199)])
        let webhook = try harness.fake.webhook("checkout.session.completed", about: sale.session)
        let notifications = try await harness.receive(webhook)
        #expect(notifications.map(\.notificationID) == ["\(webhook.id)/\(sale.lineItems[0])"])
        #expect(harness.calls > 0)
    }

    @Test func everyV1SignatureAndBothRollingSecretsAreTried() async throws {
        let harness = try StripeHarness()
        let sale = harness.fake.sale(player: "player-1", lines: [.init("prod_gems", unitAmount: 199)])
        let newSecret = "whsec_theNewSecretAfterRolling000000000000"
        let webhook = try harness.fake.webhook("checkout.session.completed", about: sale.session, secret: newSecret)
        // A stale signature by another secret first, then the one that holds.
        let header =
            "t=\(harness.fake.unixNow),v1=\(String(repeating: "ab", count: 32)),\(webhook.signature.split(separator: ",")[1])"
        let owner = harness.fake.owner(secrets: "\(FakeStripe.webhookSecret),\(newSecret)")
        let notifications = try await harness.receive(webhook, owner: owner, headers: ["stripe-signature": header])
        #expect(notifications.count == 1)
    }

    @Test(arguments: ["tampered", "other secret", "stale", "future", "v0 only", "missing"])
    func aSignatureThatDoesNotHoldIsRefusedWithoutAskingStripe(_ case: String) async throws {
        let harness = try StripeHarness()
        let sale = harness.fake.sale(player: "player-1", lines: [.init("prod_gems", unitAmount: 199)])
        let now = harness.fake.unixNow
        var webhook = try harness.fake.webhook("checkout.session.completed", about: sale.session)
        var headers = webhook.headers
        switch `case` {
        case "tampered":
            webhook = FakeStripe.Webhook(
                id: webhook.id, body: webhook.body + Data(" ".utf8), signature: webhook.signature)
            headers = webhook.headers
        case "other secret":
            headers["stripe-signature"] = try FakeStripe.signatureHeader(
                body: webhook.body, secret: "whsec_someoneElse", timestamp: now)
        case "stale":
            headers["stripe-signature"] = try FakeStripe.signatureHeader(body: webhook.body, timestamp: now - 301)
        case "future":
            headers["stripe-signature"] = try FakeStripe.signatureHeader(body: webhook.body, timestamp: now + 301)
        case "v0 only":
            headers["stripe-signature"] = webhook.signature.replacingOccurrences(of: "v1=", with: "v0=")
        default:
            headers["stripe-signature"] = nil
        }
        let refused = await rejection { _ = try await harness.receive(webhook, headers: headers) }
        let rejection = try #require(refused)
        #expect(rejection.kind == .forged || rejection.kind == .malformed)
        #expect(harness.calls == 0, "nothing in a body whose signature does not hold makes us ask Stripe")
        let answer = try #require(harness.provider.answer(to: .refused(rejection)))
        #expect(answer.status == 400)
        #expect(String(decoding: answer.body, as: UTF8.self).contains(rejection.reason))
    }

    @Test func aSignatureJustWithinToleranceHolds() async throws {
        let harness = try StripeHarness()
        let sale = harness.fake.sale(player: "player-1", lines: [.init("prod_gems", unitAmount: 199)])
        let webhook = try harness.fake.webhook(
            "checkout.session.completed", about: sale.session, timestamp: harness.fake.unixNow - 299)
        #expect(try await harness.receive(webhook).count == 1)
    }

    @Test func aClientWithoutAWebhookSecretIsAskedAgainLater() async throws {
        let harness = try StripeHarness()
        let sale = harness.fake.sale(player: "player-1", lines: [.init("prod_gems", unitAmount: 199)])
        let webhook = try harness.fake.webhook("checkout.session.completed", about: sale.session)
        let refused = await rejection { _ = try await harness.receive(webhook, owner: harness.fake.owner(secrets: "")) }
        #expect(refused?.kind == .retryable)
        #expect(harness.calls == 0)
        #expect(harness.provider.answer(to: .refused(try #require(refused))) == nil, "the core's 503")
    }

    @Test func otherOutcomesAreAnsweredByTheCore() {
        let provider = StripeProvider(configuration: StripeConfiguration())
        #expect(provider.answer(to: .accepted(duplicate: false)) == nil)
        #expect(provider.answer(to: .unknownClient) == nil)
        #expect(provider.answer(to: .unavailable) == nil)
        #expect(
            provider.answer(to: .refused(NotificationRejection(.ignored, reason: "EVENT_NOT_FOLLOWED", message: "")))
                == nil)
    }
}
