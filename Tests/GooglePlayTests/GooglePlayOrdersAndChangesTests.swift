import Foundation
import GooglePlay
import GooglePlayTestSupport
import ReceiptCore
import TestSupport
import Testing

/// Orders read by id (`orders.batchGet`) and the operator's subscription changes
/// (`subscriptionsv2` revoke, cancel, defer) against the fake, which refuses every deprecated path.
@Suite struct GooglePlayOrdersAndChanges {
    static let owner = ClientWithStoreCredentials(
        client: ClientInfo(
            clientID: "rgc_test", gameID: 42,
            appIdentifiers: [GooglePlayProvider.packageNameKind.name: ["com.example.game"]],
            environments: [.production, .sandbox], settings: [:]),
        credentials: [:])

    static func subscription(_ token: String, original: String) -> QuietSubscription {
        QuietSubscription(
            store: .googlePlay, environment: .production, originalTransactionID: original,
            latestTransactionID: original, productID: "vip.monthly", expiresDate: nil,
            appIdentifier: "com.example.game", readBackKey: token, clientID: "rgc_test")
    }

    @Test func aPushedVoidIsConfirmedByItsOrderWithoutListingVoids() async throws {
        let google = try FakeGooglePlay()
        try google.addProduct(token: "tok-refunded", orderID: "GPA.7000-0000-0000-00001")
        let provider = try GooglePlayVerify.provider(google)
        let refundedAt = Date(timeIntervalSince1970: 1_796_100_000)
        try google.setOrder("GPA.7000-0000-0000-00001", token: "tok-refunded", state: "REFUNDED", at: refundedAt)
        let pushed = try await provider.receiveNotification(
            GooglePlayNotifications.request(
                try GooglePlayNotifications.void(
                    token: "tok-refunded", orderID: "GPA.7000-0000-0000-00001", messageID: "msg-order", at: Date()),
                bearer: try google.oidcToken()),
            registered: GooglePlayNotifications.registered)
        #expect(pushed.type == "VOIDED_PURCHASE" && pushed.notificationID == "voided:GPA.7000-0000-0000-00001")
        #expect(pushed.event.kind == .refunded)
        #expect(pushed.event.purchase?.revocationDate == refundedAt)
        #expect(google.hits("orders") == 1 && google.hits("voided") == 0, "the order alone confirmed it")
        // An order of another token does not confirm a void of this one.
        try google.addProduct(token: "tok-other", orderID: "GPA.7000-0000-0000-00002")
        let crossed = try await provider.receiveNotification(
            GooglePlayNotifications.request(
                try GooglePlayNotifications.void(
                    token: "tok-other", orderID: "GPA.7000-0000-0000-00001", messageID: "msg-crossed", at: Date()),
                bearer: try google.oidcToken()),
            registered: GooglePlayNotifications.registered)
        #expect(crossed.type == "VOIDED_PURCHASE_UNCONFIRMED" && crossed.event.kind == .other)
        #expect(google.state.deprecatedCalls.get().isEmpty)
        await google.shutdown()
    }

    @Test func aRevocationIsTakenFromTheOrderWhenGoogleKeepsIt() async throws {
        let google = try FakeGooglePlay()
        try google.addSubscription(
            token: "sub-revoked", latestOrderID: "GPA.7100-0000-0000-00001", state: "SUBSCRIPTION_STATE_EXPIRED",
            expiry: Date().addingTimeInterval(-60), autoRenew: false)
        try google.setOrder("GPA.7100-0000-0000-00001", token: "sub-revoked", state: "REFUNDED")
        let provider = try GooglePlayVerify.provider(google)
        let pushed = try await GooglePlaySubscriptionPushes.push(provider, google, type: 12, token: "sub-revoked")
        #expect(pushed.notificationID == "voided:GPA.7100-0000-0000-00001")
        #expect(pushed.event.kind == .refunded)
        #expect(google.hits("voided") == 0)
        #expect(google.state.deprecatedCalls.get().isEmpty)
        await google.shutdown()
    }

    @Test func subscriptionsAreReadWithoutTheDeprecatedLatestOrderId() async throws {
        let google = try FakeGooglePlay()
        try google.addSubscription(token: "sub-v2", latestOrderID: "GPA.7200-0000-0000-00001..3")
        let purchase = try #require(
            try await GooglePlayVerify.provider(google).verify(evidence: "sub-v2", context: GooglePlayVerify.context())
                .first)
        // The fake answers as Google does now: no `latestOrderId`, the order on the line item.
        #expect(purchase.transactionID == "GPA.7200-0000-0000-00001..3")
        #expect(purchase.originalTransactionID == "GPA.7200-0000-0000-00001")
        #expect(google.state.deprecatedCalls.get().isEmpty)
        await google.shutdown()
    }

    @Test func revokeCancelAndDeferGoThroughSubscriptionsV2() async throws {
        let google = try FakeGooglePlay()
        let end = Date(timeIntervalSince1970: 1_796_000_000)
        try google.addSubscription(token: "sub-a", latestOrderID: "GPA.7300-0000-0000-00001", expiry: end)
        try google.addSubscription(token: "sub-b", latestOrderID: "GPA.7300-0000-0000-00002", expiry: end)
        let provider = try GooglePlayVerify.provider(google)
        let later = try await provider.change(
            .deferRenewal(days: 7), of: Self.subscription("sub-a", original: "GPA.7300-0000-0000-00001"),
            owner: Self.owner)
        #expect(later == end.addingTimeInterval(7 * 86_400))
        // The etag read just before went with it: a second deferral reads the new one.
        let again = try await provider.change(
            .deferRenewal(days: 1), of: Self.subscription("sub-a", original: "GPA.7300-0000-0000-00001"),
            owner: Self.owner)
        #expect(again == end.addingTimeInterval(8 * 86_400))
        _ = try await provider.change(
            .cancel, of: Self.subscription("sub-b", original: "GPA.7300-0000-0000-00002"), owner: Self.owner)
        _ = try await provider.change(
            .revoke(refund: .prorated), of: Self.subscription("sub-b", original: "GPA.7300-0000-0000-00002"),
            owner: Self.owner)
        let changes = google.state.subscriptionChanges.get()
        #expect(changes.count == 4)
        #expect(changes[0].hasPrefix("defer sub-a ") && changes[0].contains(#""deferDuration":"604800s""#))
        #expect(changes[0].contains(#""etag":"etag-1""#))
        #expect(
            changes[2]
                == #"cancel sub-b {"cancellationContext":{"cancellationType":"DEVELOPER_REQUESTED_STOP_PAYMENTS"}}"#)
        #expect(changes[3] == #"revoke sub-b {"revocationContext":{"proratedRefund":{}}}"#)
        // A token Google does not know: refused, nothing changed.
        let refused = await GooglePlayVerify.refusal {
            _ = try await provider.change(
                .revoke(refund: .full), of: Self.subscription("sub-unknown", original: "GPA.7300-0000-0000-00009"),
                owner: Self.owner)
        }
        #expect(refused?.code == .verificationFailed)
        #expect(google.state.subscriptionChanges.get().count == 4)
        #expect(google.state.deprecatedCalls.get().isEmpty)
        await google.shutdown()
    }

    @Test func theVoidedPollReadsEachPagesOrdersToTellAPartialRefund() async throws {
        let google = try FakeGooglePlay()
        try google.addProduct(token: "tok-part", orderID: "GPA.7400-0000-0000-00001", quantity: 3)
        try google.addProduct(token: "tok-all", orderID: "GPA.7400-0000-0000-00002")
        // Voids that do not say their refund type; Google's orders do.
        try google.addVoided(token: "tok-part", orderID: "GPA.7400-0000-0000-00001", refundType: nil)
        try google.addVoided(token: "tok-all", orderID: "GPA.7400-0000-0000-00002", refundType: nil)
        try google.setOrder("GPA.7400-0000-0000-00001", token: "tok-part", state: "PARTIALLY_REFUNDED")
        try google.setOrder("GPA.7400-0000-0000-00002", token: "tok-all", state: "REFUNDED")
        google.state.voidedPageSize.set(10)
        let poller = VoidedPurchasePoller(provider: try GooglePlayVerify.provider(google), interval: .seconds(1))
        let found = LockedBox<[StoreNotification]>([])
        try await poller.poll(owners: [Self.owner], run: MemoryPollRun()) { batch in found.update { $0 += batch } }
        let refunds = Dictionary(uniqueKeysWithValues: found.get().map { ($0.notificationID, $0) })
        let partial = try #require(refunds["voided:GPA.7400-0000-0000-00001"]?.event.purchase?.refund)
        #expect(partial.storeSaysPartial == true && partial.storeType == "QUANTITY_BASED_PARTIAL_REFUND")
        let full = try #require(refunds["voided:GPA.7400-0000-0000-00002"]?.event.purchase?.refund)
        #expect(full.storeSaysPartial == false && full.storeType == "FULL_REFUND")
        #expect(google.hits("orders") == 1, "one orders.batchGet for the page")
        #expect(google.state.deprecatedCalls.get().isEmpty)
        await google.shutdown()
    }
}
