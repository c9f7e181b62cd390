import Foundation
import GooglePlay
import GooglePlayTestSupport
import ReceiptCore
import TestSupport
import Testing

/// Subscription notifications are hints: the token is read back from the fake Google
/// (`subscriptionsv2.get`) and only what that answer shows becomes a ledger event.
@Suite struct GooglePlaySubscriptionPushes {
    static let names = [
        2: "SUBSCRIPTION_RENEWED", 3: "SUBSCRIPTION_CANCELED", 4: "SUBSCRIPTION_PURCHASED", 5: "SUBSCRIPTION_ON_HOLD",
        6: "SUBSCRIPTION_IN_GRACE_PERIOD", 7: "SUBSCRIPTION_RESTARTED", 10: "SUBSCRIPTION_PAUSED",
        12: "SUBSCRIPTION_REVOKED",
        13: "SUBSCRIPTION_EXPIRED",
    ]

    /// A push of `pushed` for a subscription Google reads in `state`; `kind` nil when nothing may change.
    struct Case: Sendable, CustomTestStringConvertible {
        let pushed: Int
        let state: String
        let autoRenew: Bool
        let kind: StoreEvent.Kind?
        init(_ pushed: Int, _ state: String, autoRenew: Bool = true, _ kind: StoreEvent.Kind?) {
            self.pushed = pushed
            self.state = state
            self.autoRenew = autoRenew
            self.kind = kind
        }
        /// Google's expiry: past once access has ended, else ahead (a grace period's end, too).
        var ended: Bool {
            ["SUBSCRIPTION_STATE_EXPIRED", "SUBSCRIPTION_STATE_PAUSED", "SUBSCRIPTION_STATE_ON_HOLD"].contains(state)
        }
        var testDescription: String { "\(names[pushed] ?? "\(pushed)") while Google reads \(state)" }
    }

    static let cases: [Case] = [
        // Claims Google's answer does not bear out: kept, nothing changes.
        Case(12, "SUBSCRIPTION_STATE_ACTIVE", nil),
        Case(12, "SUBSCRIPTION_STATE_CANCELED", autoRenew: false, nil),
        Case(12, "SUBSCRIPTION_STATE_IN_GRACE_PERIOD", nil),
        Case(13, "SUBSCRIPTION_STATE_ACTIVE", nil),
        Case(10, "SUBSCRIPTION_STATE_ACTIVE", nil),
        Case(5, "SUBSCRIPTION_STATE_ACTIVE", nil),
        Case(6, "SUBSCRIPTION_STATE_EXPIRED", autoRenew: false, nil),
        Case(3, "SUBSCRIPTION_STATE_ACTIVE", nil),
        Case(7, "SUBSCRIPTION_STATE_CANCELED", autoRenew: false, nil),
        Case(2, "SUBSCRIPTION_STATE_EXPIRED", autoRenew: false, nil),
        Case(4, "SUBSCRIPTION_STATE_ON_HOLD", nil),
        // Borne out: Google's answer makes the event.
        Case(12, "SUBSCRIPTION_STATE_EXPIRED", autoRenew: false, .expired),  // no void listed: an expiry, not a refund
        Case(13, "SUBSCRIPTION_STATE_EXPIRED", autoRenew: false, .expired),
        Case(10, "SUBSCRIPTION_STATE_PAUSED", .expired),
        Case(5, "SUBSCRIPTION_STATE_ON_HOLD", .billingIssue),
        Case(6, "SUBSCRIPTION_STATE_IN_GRACE_PERIOD", .billingIssue),
        Case(3, "SUBSCRIPTION_STATE_CANCELED", autoRenew: false, .renewalStatusChanged),
        Case(7, "SUBSCRIPTION_STATE_ACTIVE", .renewalStatusChanged),
        Case(2, "SUBSCRIPTION_STATE_ACTIVE", .renewed),
        Case(2, "SUBSCRIPTION_STATE_CANCELED", autoRenew: false, .renewed),
        Case(4, "SUBSCRIPTION_STATE_ACTIVE", .subscribed),
    ]

    static func push(
        _ provider: GooglePlayProvider, _ google: FakeGooglePlay, type: Int, token: String,
        eventTime: Date = Date()
    ) async throws -> StoreNotification {
        let body = try FakeGooglePlay.pushBody(
            [
                "version": "1.0", "packageName": "com.example.game",
                "eventTimeMillis": String(Int64(eventTime.timeIntervalSince1970 * 1000)),
                "subscriptionNotification": [
                    "version": "1.0", "notificationType": type, "purchaseToken": token,
                    "subscriptionId": "vip.monthly",
                ],
            ], messageID: "msg-\(type)-\(token)")
        return try await provider.receiveNotification(
            GooglePlayNotifications.request(body, bearer: try google.oidcToken()),
            registered: GooglePlayNotifications.registered)
    }

    @Test(arguments: cases) func onlyWhatGoogleReadsChangesTheLedger(_ given: Case) async throws {
        let google = try FakeGooglePlay()
        let now = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
        let expiry = now.addingTimeInterval(given.ended ? -3_600 : 3 * 86_400)
        try google.addSubscription(
            token: "sub-1", latestOrderID: "GPA.4444-0000-0000-00001..2", state: given.state, expiry: expiry,
            autoRenew: given.autoRenew)
        let notification = try await Self.push(
            try GooglePlayVerify.provider(google), google, type: given.pushed, token: "sub-1")
        let name = try #require(Self.names[given.pushed])
        #expect(notification.notificationID == "msg-\(given.pushed)-sub-1")
        #expect(notification.subtype == given.state)  // what decided it, for support
        #expect(notification.transactionID == "GPA.4444-0000-0000-00001..2")
        guard let kind = given.kind else {
            #expect(notification.type == "\(name)_UNCONFIRMED")
            #expect(notification.event.kind == .other)
            return await google.shutdown()
        }
        #expect(notification.type == name)
        #expect(notification.event.kind == kind)
        // Dates and auto-renewal are Google's, whatever the push said.
        #expect(notification.event.purchase?.expiresDate == expiry)
        #expect(notification.event.autoRenew == given.autoRenew)
        #expect(notification.event.purchase?.revocationDate == nil)
        let grace = given.state == "SUBSCRIPTION_STATE_IN_GRACE_PERIOD"
        #expect(notification.event.gracePeriodExpires == (grace ? expiry : nil))
        await google.shutdown()
    }

    @Test func aRevocationIsARefundOnlyWhenGoogleListsTheVoidOfThatOrderAndToken() async throws {
        let google = try FakeGooglePlay()
        let voidedAt = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 - 600).rounded(.down))
        for token in ["sub-revoked", "sub-lapsed"] {
            try google.addSubscription(
                token: token, latestOrderID: "GPA.5555-0000-0000-00001..1", state: "SUBSCRIPTION_STATE_EXPIRED",
                expiry: voidedAt, autoRenew: false)
        }
        // The void is listed for one token; the other reads the same order but has no void of its own.
        try google.addVoided(
            token: "sub-revoked", orderID: "GPA.5555-0000-0000-00001..1", reason: 5, voidedAt: voidedAt)
        let provider = try GooglePlayVerify.provider(google)
        let revoked = try await Self.push(provider, google, type: 12, token: "sub-revoked")
        #expect(revoked.type == "SUBSCRIPTION_REVOKED")
        // On the void's own id: the voided-purchase push and the poll find a duplicate, not a second refund.
        #expect(revoked.notificationID == "voided:GPA.5555-0000-0000-00001..1")
        #expect(revoked.event.kind == .refunded)
        #expect(revoked.event.purchase?.transactionID == "GPA.5555-0000-0000-00001..1")
        #expect(revoked.event.purchase?.revocationDate == voidedAt)
        #expect(revoked.event.purchase?.revocationReasonCode == 5)
        let lapsed = try await Self.push(provider, google, type: 12, token: "sub-lapsed")
        #expect(lapsed.notificationID == "msg-12-sub-lapsed")
        #expect(lapsed.event.kind == .expired)
        #expect(lapsed.event.purchase?.revocationDate == nil)
        await google.shutdown()
    }

    @Test func aTokenGoogleDoesNotKnowChangesNothing() async throws {
        let google = try FakeGooglePlay()
        let notification = try await Self.push(
            try GooglePlayVerify.provider(google), google, type: 12, token: "sub-made-up")
        #expect(notification.type == "SUBSCRIPTION_REVOKED_UNCONFIRMED")
        #expect(notification.event.kind == .other)
        #expect(notification.event.purchase == nil)
        #expect(google.hits("subscriptionsv2") >= 1)
        await google.shutdown()
    }

    @Test func googleUnreachableMakesPubSubSendTheRevocationAgain() async throws {
        let google = try FakeGooglePlay()
        try google.addSubscription(
            token: "sub-1", state: "SUBSCRIPTION_STATE_EXPIRED", expiry: Date().addingTimeInterval(-60),
            autoRenew: false)
        let provider = try GooglePlayVerify.provider(google)
        // The subscription cannot be read, then the voided purchases cannot be listed.
        for route in ["subscriptionsv2", "voided"] {
            google.failFirst(route, [503, 503, 503])
            let rejection = await GooglePlayNotifications.rejection {
                _ = try await Self.push(provider, google, type: 12, token: "sub-1")
            }
            #expect(rejection?.kind == .retryable, "\(route)")
        }
        #expect(try await Self.push(provider, google, type: 12, token: "sub-1").event.kind == .expired)
        await google.shutdown()
    }
}
