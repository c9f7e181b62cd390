import Foundation
import HuaweiAppGallery
import HuaweiAppGalleryTestSupport
import ReceiptCore
import TestSupport
import Testing

/// What Huawei's signed data must show before it is a purchase: one rule for one-time products
/// and subscriptions, claims and news (notifications, read-backs) alike, and Huawei's `responseCode` 6 taken for what it is (a token the service
/// will not read), not a credentials failure.
@Suite struct HuaweiAppGalleryStates {
    /// Pending (3), initialized (-1) and no state at all: nothing to deliver yet.
    static let unfinishedStates: [Int?] = [3, -1, nil]

    @Test(arguments: unfinishedStates)
    func aPurchaseNotFinishedIsRefused(state: Int?) async throws {
        let huawei = try FakeHuawei()
        try huawei.addProduct(token: "tok.state.p", extra: ["purchaseState": state.map { $0 as Any } ?? NSNull()])
        let refused = await HuaweiAppGalleryVerify.refusal {
            _ = try await HuaweiAppGalleryVerify.provider(huawei).verify(
                evidence: "tok.state.p", context: HuaweiAppGalleryVerify.context(huawei))
        }
        #expect(
            refused?.code == .verificationFailed && refused?.reason == "PURCHASE_NOT_COMPLETED",
            "\(String(describing: refused))")
        await huawei.shutdown()
    }

    @Test(arguments: unfinishedStates)
    func aSubscriptionNotFinishedIsRefusedByTheSameRule(state: Int?) async throws {
        let huawei = try FakeHuawei()
        try huawei.addSubscription(
            token: "tok.state.s", subscriptionID: "sub.state",
            extra: ["purchaseState": state.map { $0 as Any } ?? NSNull()])
        let refused = await HuaweiAppGalleryVerify.refusal {
            _ = try await HuaweiAppGalleryVerify.provider(huawei).verify(
                evidence: "tok.state.s",
                context: HuaweiAppGalleryVerify.context(
                    huawei, productID: "vip.monthly", fields: ["huawei_subscription_id": "sub.state"]))
        }
        #expect(
            refused?.code == .verificationFailed && refused?.reason == "PURCHASE_NOT_COMPLETED",
            "\(String(describing: refused))")
        await huawei.shutdown()
    }

    /// Huawei's news of a payment Huawei's own answer shows unfinished: no one-time charge kept,
    /// answered as ignored like any order event Huawei does not bear out.
    @Test(arguments: unfinishedStates)
    func aPaymentNotificationForAPurchaseNotFinishedRecordsNothing(state: Int?) async throws {
        let huawei = try FakeHuawei()
        try huawei.addProduct(token: "tok.state.pn", extra: ["purchaseState": state.map { $0 as Any } ?? NSNull()])
        let rejected = await HuaweiAppGalleryNotifications.rejection {
            let kept = try await HuaweiAppGalleryVerify.provider(huawei).receiveNotification(
                try HuaweiAppGalleryNotifications.request(
                    huawei, body: FakeHuawei.orderNotification(type: 1, token: "tok.state.pn")),
                registered: HuaweiAppGalleryNotifications.registered)
            Issue.record("a payment Huawei reads unfinished was kept as \(kept.type) (\(kept.event.kind))")
        }
        #expect(rejected?.kind == .ignored && rejected?.reason == "PURCHASE_UNKNOWN", "\(String(describing: rejected))")
        #expect(huawei.hits("verify") == 1, "Huawei was asked")
        await huawei.shutdown()
    }

    /// A subscription verified while purchased, then read by Huawei as unfinished: neither its
    /// renewal news nor its read-back applies a period.
    @Test(arguments: unfinishedStates)
    func aSubscriptionReadAsNotFinishedIsNeitherRenewedByNewsNorReadBack(state: Int?) async throws {
        let huawei = try FakeHuawei()
        let provider = HuaweiAppGalleryVerify.provider(huawei)
        try huawei.addSubscription(token: "tok.state.sn", subscriptionID: "sub.state.sn", orderID: "order.state.sn")
        let quiet = try await HuaweiAppGalleryReadBack.quiet(
            huawei, provider: provider, token: "tok.state.sn", subscriptionID: "sub.state.sn")
        try huawei.renewSubscription(
            token: "tok.state.sn", orderID: "order.state.sn.2",
            extra: ["purchaseState": state.map { $0 as Any } ?? NSNull()])
        let body = try huawei.subscriptionNotification([
            "notificationType": 2, "subscriptionId": "sub.state.sn", "purchaseToken": "tok.state.sn",
        ])
        let news = try await provider.receiveNotification(
            try HuaweiAppGalleryNotifications.request(huawei, body: body),
            registered: HuaweiAppGalleryNotifications.registered)
        #expect(
            news.type == "RENEWAL_UNCONFIRMED" && news.event.kind == .other && news.event.purchase == nil,
            "\(news.type) \(news.event.kind)")
        let readBack = try await provider.readBack(quiet, owner: HuaweiAppGalleryCancelledPoll.owner(huawei))
        #expect(readBack == nil, "read back as \(String(describing: readBack?.subtype))")
        await huawei.shutdown()
    }

    /// Canceled as news: a one-time product's cancel is its revocation; a subscription's only when
    /// Huawei dates it (`cancelTime`), otherwise it tells nothing to apply.
    @Test func aCanceledSubscriptionIsRevokedOnlyWhenHuaweiDatesIt() async throws {
        let huawei = try FakeHuawei()
        let provider = HuaweiAppGalleryVerify.provider(huawei)
        try huawei.addSubscription(token: "tok.state.c", subscriptionID: "sub.state.c", orderID: "order.state.c")
        let quiet = try await HuaweiAppGalleryReadBack.quiet(
            huawei, provider: provider, token: "tok.state.c", subscriptionID: "sub.state.c")
        let owner = try HuaweiAppGalleryCancelledPoll.owner(huawei)
        try huawei.addSubscription(
            token: "tok.state.c", subscriptionID: "sub.state.c", orderID: "order.state.c", extra: ["purchaseState": 1])
        let undated = try await provider.readBack(quiet, owner: owner)
        #expect(undated == nil, "read back as \(String(describing: undated?.subtype))")
        let canceledAt = Int64(Date().timeIntervalSince1970 * 1000) - 60_000
        try huawei.addSubscription(
            token: "tok.state.c", subscriptionID: "sub.state.c", orderID: "order.state.c",
            extra: ["purchaseState": 1, "cancelTime": canceledAt])
        let dated = try #require(try await provider.readBack(quiet, owner: owner))
        #expect(dated.subtype == "REVOKED" && dated.event.kind == .refunded)
        try huawei.addProduct(token: "tok.state.c1", orderID: "order.state.c1", state: 1)
        let order = try await provider.receiveNotification(
            try HuaweiAppGalleryNotifications.request(
                huawei, body: FakeHuawei.orderNotification(type: 2, token: "tok.state.c1")),
            registered: HuaweiAppGalleryNotifications.registered)
        #expect(
            order.type == "REFUND_SUCCESS" && order.event.kind == .refunded
                && order.event.purchase?.revocationReason == "canceled")
        await huawei.shutdown()
    }

    @Test func aSubscriptionWithoutAnExpiryIsNeitherClaimedNorAppliedAsActiveForEver() async throws {
        let huawei = try FakeHuawei()
        try huawei.addSubscription(token: "tok.noexp", subscriptionID: "sub.noexp", extra: ["expirationDate": NSNull()])
        let provider = HuaweiAppGalleryVerify.provider(huawei)
        let refused = await HuaweiAppGalleryVerify.refusal {
            _ = try await provider.verify(
                evidence: "tok.noexp",
                context: HuaweiAppGalleryVerify.context(
                    huawei, productID: "vip.monthly", fields: ["huawei_subscription_id": "sub.noexp"]))
        }
        #expect(
            refused?.code == .verificationFailed && refused?.reason == "SUBSCRIPTION_EXPIRY_MISSING",
            "\(String(describing: refused))")
        // Its renewal news changes nothing either.
        let body = try huawei.subscriptionNotification([
            "notificationType": 2, "subscriptionId": "sub.noexp", "purchaseToken": "tok.noexp",
        ])
        let news = try await provider.receiveNotification(
            try HuaweiAppGalleryNotifications.request(huawei, body: body),
            registered: HuaweiAppGalleryNotifications.registered)
        #expect(news.type == "RENEWAL_UNCONFIRMED" && news.event.purchase == nil)
        await huawei.shutdown()
    }

    @Test func aSubscriptionTokenSentToTheOrderServiceIsTheClientsMistakeWithAHint() async throws {
        let huawei = try FakeHuawei()
        try huawei.addSubscription(token: "tok.six", subscriptionID: "sub.six")
        // A bare token with a product id goes to the order service, which answers code 6.
        let refused = await HuaweiAppGalleryVerify.refusal {
            _ = try await HuaweiAppGalleryVerify.provider(huawei).verify(
                evidence: "tok.six", context: HuaweiAppGalleryVerify.context(huawei, productID: "vip.monthly"))
        }
        #expect(
            refused?.code == .verificationFailed,
            "a client's mistake, not the verifier's: \(String(describing: refused))")
        #expect(refused?.reason == "PURCHASE_TOKEN_REFUSED" && refused?.isRetryable == false)
        #expect(
            refused?.message.contains("huawei_subscription_id") == true
                && refused?.message.contains("InAppPurchaseData") == true)
        #expect(huawei.hits("verify") == 1)
        await huawei.shutdown()
    }

    /// Another refusal (here 5, an invalid parameter) may be the app's or this service's setup, not
    /// the notification's: answered for a retry, so a genuine notification is not acknowledged and lost.
    @Test func anotherRefusalInAnOrderNotificationIsARetryNotIgnored() async throws {
        let huawei = try FakeHuawei()
        try huawei.addProduct(token: "tok.five.n", productID: "gems100", state: 2)
        let provider = HuaweiAppGalleryVerify.provider(huawei)
        do {
            let order = try await provider.receiveNotification(
                try HuaweiAppGalleryNotifications.request(
                    huawei, body: FakeHuawei.orderNotification(type: 2, token: "tok.five.n", productID: "gems500")),
                registered: HuaweiAppGalleryNotifications.registered)
            Issue.record("a notification Huawei refused to read was kept as \(order.type)")
        } catch let rejection as NotificationRejection {
            #expect(rejection.kind == .retryable, "\(rejection)")
        }
        #expect(huawei.hits("verify") == 1)
        await huawei.shutdown()
    }

    @Test func code6InANotificationIsNothingToLearnNotARetry() async throws {
        let huawei = try FakeHuawei()
        try huawei.addSubscription(token: "tok.six.n", subscriptionID: "sub.six.n")
        let provider = HuaweiAppGalleryVerify.provider(huawei)
        // An order notification naming a subscription's token: the order service answers 6, and
        // the notification is answered as ignored (nothing recorded), not refused for a retry.
        do {
            let order = try await provider.receiveNotification(
                try HuaweiAppGalleryNotifications.request(
                    huawei, body: FakeHuawei.orderNotification(type: 2, token: "tok.six.n", productID: "vip.monthly")),
                registered: HuaweiAppGalleryNotifications.registered)
            Issue.record("an order notification Huawei does not back was kept as \(order.type)")
        } catch let rejection as NotificationRejection {
            #expect(rejection.kind == .ignored, "\(rejection)")
        }
        // A signed status update whose token the subscription service refuses (6).
        let body = try huawei.subscriptionNotification([
            "notificationType": 2, "subscriptionId": "sub.other", "purchaseToken": "tok.six.n",
        ])
        let sub = try await provider.receiveNotification(
            try HuaweiAppGalleryNotifications.request(huawei, body: body),
            registered: HuaweiAppGalleryNotifications.registered)
        #expect(sub.type == "RENEWAL_UNCONFIRMED" && sub.event.purchase == nil)
        await huawei.shutdown()
    }
}
