import Foundation
import HuaweiAppGallery
import HuaweiAppGalleryTestSupport
import ReceiptCore
import TestSupport
import Testing

/// A quiet subscription read back from the subscription service with the key its verification
/// recorded, and turned into the event a push would have carried.
@Suite struct HuaweiAppGalleryReadBack {
    /// Verifies the subscription as a client would, and returns it as the ledger's quiet row.
    static func quiet(
        _ huawei: FakeHuawei, provider: HuaweiAppGalleryProvider, token: String, subscriptionID: String
    ) async throws -> QuietSubscription {
        let verified = try #require(
            try await provider.verify(
                evidence: token,
                context: HuaweiAppGalleryVerify.context(
                    huawei, productID: "vip.monthly", fields: ["huawei_subscription_id": subscriptionID])
            ).first)
        return QuietSubscription(
            store: .huaweiAppGallery, environment: verified.environment,
            originalTransactionID: verified.originalTransactionID ?? "",
            latestTransactionID: verified.transactionID, productID: verified.productID,
            expiresDate: verified.expiresDate,
            appIdentifier: verified.appIdentifier, readBackKey: verified.readBackKey, clientID: "rgc_huawei")
    }

    @Test func aRenewedSubscriptionReadsBackAsItsNewPeriod() async throws {
        let huawei = try FakeHuawei()
        let provider = HuaweiAppGalleryVerify.provider(huawei)
        try huawei.addSubscription(
            token: "tok.rb.1", subscriptionID: "sub.rb.1", orderID: "order.rb.1", expiry: Date().addingTimeInterval(60))
        let quiet = try await Self.quiet(huawei, provider: provider, token: "tok.rb.1", subscriptionID: "sub.rb.1")
        #expect(quiet.readBackKey != nil)
        // Huawei renewed it; no push arrived.
        let renewedUntil = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 + 30 * 86_400).rounded())
        try huawei.renewSubscription(token: "tok.rb.1", orderID: "order.rb.1.2", expiry: renewedUntil)
        let owner = try HuaweiAppGalleryCancelledPoll.owner(huawei)
        let notification = try #require(try await provider.readBack(quiet, owner: owner))
        #expect(notification.event.kind == .renewed)
        #expect(notification.subtype == "ACTIVE")
        #expect(quiet.originalTransactionID == "sub.rb.1")
        #expect(notification.notificationID == "subscription-state:sub.rb.1:order.rb.1.2:ACTIVE")
        #expect(
            notification.event.purchase?.transactionID == "order.rb.1.2"
                && notification.event.purchase?.originalTransactionID == "sub.rb.1")
        #expect(notification.event.purchase?.expiresDate == renewedUntil)
        #expect(!String(decoding: notification.decodedJSON, as: UTF8.self).contains("tok.rb.1"))
        #expect(huawei.hits("subscription") == 2)
        await huawei.shutdown()
    }

    @Test func anExpiredSubscriptionReadsBackAsAnEnd() async throws {
        let huawei = try FakeHuawei()
        let provider = HuaweiAppGalleryVerify.provider(huawei)
        try huawei.addSubscription(
            token: "tok.rb.2", subscriptionID: "sub.rb.2", orderID: "order.rb.2", expiry: Date().addingTimeInterval(60))
        let quiet = try await Self.quiet(huawei, provider: provider, token: "tok.rb.2", subscriptionID: "sub.rb.2")
        try huawei.addSubscription(
            token: "tok.rb.2", subscriptionID: "sub.rb.2", orderID: "order.rb.2",
            expiry: Date().addingTimeInterval(-3600),
            autoRenewing: false, extra: ["retryFlag": 0])
        let notification = try #require(
            try await provider.readBack(quiet, owner: HuaweiAppGalleryCancelledPoll.owner(huawei)))
        #expect(notification.event.kind == .expired && notification.subtype == "EXPIRED")
        #expect(notification.event.autoRenew == false)
        // Still being charged again by Huawei: a billing issue, not an end.
        try huawei.addSubscription(
            token: "tok.rb.2", subscriptionID: "sub.rb.2", orderID: "order.rb.2",
            expiry: Date().addingTimeInterval(-3600),
            extra: ["retryFlag": 1])
        let retrying = try #require(
            try await provider.readBack(quiet, owner: HuaweiAppGalleryCancelledPoll.owner(huawei)))
        #expect(retrying.event.kind == .billingIssue && retrying.subtype == "IN_BILLING_RETRY")
        await huawei.shutdown()
    }

    @Test func aRefusedKeyFailsOnlyItsClientAndAnOutageTheRun() async throws {
        let huawei = try FakeHuawei()
        let provider = HuaweiAppGalleryVerify.provider(huawei, retries: 1)
        try huawei.addSubscription(token: "tok.rb.3", subscriptionID: "sub.rb.3", orderID: "order.rb.3")
        let quiet = try await Self.quiet(huawei, provider: provider, token: "tok.rb.3", subscriptionID: "sub.rb.3")
        let refused = try HuaweiAppGalleryCancelledPoll.owner(
            huawei, credentials: [HuaweiAppGalleryProvider.Setting.appSecret: "wrong-secret"])
        await #expect { _ = try await provider.readBack(quiet, owner: refused) } throws: { error in
            guard let failed = error as? SubscriptionReadFailed else { return false }
            return !failed.storeWide && failed.message.contains("--huawei-app-secret")
                && !failed.message.contains("wrong-secret")
        }
        huawei.failFirst("subscription", [503])
        await #expect {
            _ = try await provider.readBack(quiet, owner: HuaweiAppGalleryCancelledPoll.owner(huawei))
        } throws: { error in
            (error as? SubscriptionReadFailed)?.storeWide == true
        }
        await huawei.shutdown()
    }

    @Test func withoutAReadBackKeyOrAKnownTokenThereIsNothingToLearn() async throws {
        let huawei = try FakeHuawei()
        let provider = HuaweiAppGalleryVerify.provider(huawei)
        try huawei.addSubscription(token: "tok.rb.4", subscriptionID: "sub.rb.4", orderID: "order.rb.4")
        let quiet = try await Self.quiet(huawei, provider: provider, token: "tok.rb.4", subscriptionID: "sub.rb.4")
        let owner = try HuaweiAppGalleryCancelledPoll.owner(huawei)
        let keyless = QuietSubscription(
            store: .huaweiAppGallery, environment: .production, originalTransactionID: "order.rb.4",
            latestTransactionID: nil,
            productID: nil, expiresDate: nil, appIdentifier: nil, readBackKey: nil, clientID: "rgc_huawei")
        #expect(try await provider.readBack(keyless, owner: owner) == nil)
        huawei.state.subscriptions.set([:])  // Huawei forgot the token (code 6 for it): not the client's key
        #expect(try await provider.readBack(quiet, owner: owner) == nil)
        await huawei.shutdown()
    }
}
