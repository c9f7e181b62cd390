import Foundation
import GooglePlay
import GooglePlayTestSupport
import OpenSSLCrypto
import ReceiptCore
import TestSupport
import Testing

/// Real-time developer notifications: OIDC push tokens against the fake JWKS, the shared-token
/// alternative, and the fetched purchase becoming the ledger event.
@Suite struct GooglePlayNotifications {
    static let registered = RegisteredApps(appIdentifiers: ["com.example.game"], environments: [.production, .sandbox])

    static func request(_ body: Data, bearer: String? = nil, query: [String: String] = [:]) -> NotificationRequest {
        NotificationRequest(body: body, headers: bearer.map { ["authorization": "Bearer \($0)"] } ?? [:], query: query)
    }

    static func rejection(_ body: () async throws -> Void) async -> NotificationRejection? {
        do { try await body(); return nil } catch let rejection as NotificationRejection { return rejection } catch {
            return nil
        }
    }

    static func subscription(_ type: Int, token: String) throws -> Data {
        try FakeGooglePlay.pushBody(
            [
                "version": "1.0", "packageName": "com.example.game", "eventTimeMillis": "1716389123000",
                "subscriptionNotification": [
                    "version": "1.0", "notificationType": type, "purchaseToken": token,
                    "subscriptionId": "vip.monthly",
                ],
            ], messageID: "msg-\(type)-\(token)")
    }

    @Test func anAuthenticatedPushIsCheckedAgainstGooglesKeysAndFetchesThePurchase() async throws {
        let google = try FakeGooglePlay()
        try google.addSubscription(token: "sub-1", latestOrderID: "GPA.1234-5678-9012-34567..1")
        let provider = try GooglePlayVerify.provider(google)
        let renewed = try await provider.receiveNotification(
            Self.request(try Self.subscription(2, token: "sub-1"), bearer: try google.oidcToken()),
            registered: Self.registered)
        #expect(renewed.notificationID == "msg-2-sub-1")
        #expect(renewed.type == "SUBSCRIPTION_RENEWED")
        #expect(renewed.event.kind == .renewed)
        #expect(renewed.event.purchase?.transactionID == "GPA.1234-5678-9012-34567..1")
        #expect(renewed.event.purchase?.originalTransactionID == "GPA.1234-5678-9012-34567")
        // At least one fetch (the HTTP client may retry one that a loaded machine made slow).
        let fetchedForTheFirst = google.hits("jwks")
        #expect(fetchedForTheFirst >= 1)
        // Google still reads the subscription active: a revocation pushed for it changes nothing.
        let revoked = try await provider.receiveNotification(
            Self.request(try Self.subscription(12, token: "sub-1"), bearer: try google.oidcToken()),
            registered: Self.registered)
        #expect(revoked.type == "SUBSCRIPTION_REVOKED_UNCONFIRMED")
        #expect(revoked.event.kind == .other)
        #expect(revoked.event.purchase?.revocationDate == nil)
        // The JWKS was cached by its Cache-Control: the second push fetched nothing.
        #expect(google.hits("jwks") == fetchedForTheFirst)

        let body = try Self.subscription(2, token: "sub-1")
        let forgeries: [(String, String?)] = [
            ("no token", nil),
            ("another audience", try google.oidcToken(audience: "https://elsewhere.example")),
            ("another service account", try google.oidcToken(email: "attacker@evil.iam.gserviceaccount.com")),
            ("unverified e-mail", try google.oidcToken(emailVerified: false)),
            ("expired", try google.oidcToken(expiresIn: -600)),
            ("not Google", try google.oidcToken(issuer: "https://evil.example")),
            ("signed by another key", try google.oidcToken(key: try TestKeys.rsa(.unrelated))),
            ("unknown kid", try google.oidcToken(keyID: "rotated-away")),
        ]
        for (name, token) in forgeries {
            let rejection = await Self.rejection {
                _ = try await provider.receiveNotification(
                    Self.request(body, bearer: token), registered: Self.registered)
            }
            #expect(rejection?.kind == .forged, "\(name)")
        }
        await google.shutdown()
    }

    @Test func aSharedURLTokenIsComparedAndTestNotificationsChangeNothing() async throws {
        let google = try FakeGooglePlay()
        var configuration = try google.configuration(pushToken: "shared-push-token-0123456789")
        configuration.pushAudience = nil
        configuration.pushServiceAccount = nil
        let provider = GooglePlayProvider(
            configuration: configuration, http: FakeGooglePlay.http(), logger: Logger(minimumLevel: .error))
        let test = try FakeGooglePlay.pushBody(
            [
                "version": "1.0", "packageName": "com.example.game", "eventTimeMillis": "1716389123000",
                "testNotification": ["version": "1.0"],
            ], messageID: "msg-test")
        let accepted = try await provider.receiveNotification(
            Self.request(test, query: ["token": "shared-push-token-0123456789"]), registered: Self.registered)
        #expect(accepted.event.kind == .test)
        #expect(accepted.event.purchase == nil)
        for query in [[:], ["token": "shared-push-token-012345678X"]] {
            let rejection = await Self.rejection {
                _ = try await provider.receiveNotification(
                    Self.request(test, query: query), registered: Self.registered)
            }
            #expect(rejection?.kind == .forged)
        }
        let malformed = await Self.rejection {
            _ = try await provider.receiveNotification(
                Self.request(Data(#"{"message":{}}"#.utf8), query: ["token": "shared-push-token-0123456789"]),
                registered: Self.registered)
        }
        #expect(malformed?.kind == .malformed)
        await google.shutdown()
    }

    @Test func googleUnreachableMakesPubSubRetryAndAVoidIsKeyedByItsOrder() async throws {
        let google = try FakeGooglePlay()
        try google.addProduct(token: "tok-void", orderID: "GPA.7777-0000-0000-00001", state: 1)
        let provider = try GooglePlayVerify.provider(google)
        let voided = try FakeGooglePlay.pushBody(
            [
                "version": "1.0", "packageName": "com.example.game", "eventTimeMillis": "1716389999000",
                "voidedPurchaseNotification": [
                    "purchaseToken": "tok-void", "orderId": "GPA.7777-0000-0000-00001",
                    "productType": 2, "refundType": 1,
                ],
            ], messageID: "msg-void")
        google.failFirst("productsv2", [503, 503, 503])
        let retry = await Self.rejection {
            _ = try await provider.receiveNotification(
                Self.request(voided, bearer: try google.oidcToken()), registered: Self.registered)
        }
        #expect(retry?.kind == .retryable)
        let notification = try await provider.receiveNotification(
            Self.request(voided, bearer: try google.oidcToken()), registered: Self.registered)
        #expect(notification.notificationID == "voided:GPA.7777-0000-0000-00001")
        #expect(notification.event.kind == .refunded)
        #expect(notification.event.purchase?.productID == "gems100")
        #expect(notification.event.purchase?.revocationDate == Date(timeIntervalSince1970: 1_716_389_999))
        await google.shutdown()
    }

    static func void(
        token: String, orderID: String, messageID: String, productType: Int = 2, at eventTime: Date
    ) throws -> Data {
        try FakeGooglePlay.pushBody(
            [
                "version": "1.0", "packageName": "com.example.game",
                "eventTimeMillis": String(Int64(eventTime.timeIntervalSince1970 * 1000)),
                "voidedPurchaseNotification": [
                    "purchaseToken": token, "orderId": orderID, "productType": productType, "refundType": 1,
                ],
            ],
            messageID: messageID)
    }

    @Test func aPushedVoidIsAppliedOnlyWhenGoogleConfirmsThatOrderOfThatToken() async throws {
        let google = try FakeGooglePlay()
        try google.addProduct(token: "tok-paid", orderID: "GPA.1111-0000-0000-00001")
        try google.addProduct(token: "tok-canceled", orderID: "GPA.1111-0000-0000-00002", state: 1)
        try google.addSubscription(
            token: "sub-ended", latestOrderID: "GPA.2222-0000-0000-00003", state: "SUBSCRIPTION_STATE_EXPIRED")
        let provider = try GooglePlayVerify.provider(google)
        let voidedAt = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 - 7_200).rounded(.down))
        func push(
            _ token: String, _ orderID: String, _ messageID: String, productType: Int = 2
        ) async throws -> StoreNotification {
            try await provider.receiveNotification(
                Self.request(
                    try Self.void(
                        token: token, orderID: orderID, messageID: messageID, productType: productType,
                        at: voidedAt.addingTimeInterval(60)),
                    bearer: try google.oidcToken()),
                registered: Self.registered)
        }
        func expectUnconfirmed(
            _ notification: StoreNotification, _ messageID: String, sourceLocation: SourceLocation = #_sourceLocation
        ) {
            #expect(notification.event.kind == .other, sourceLocation: sourceLocation)
            #expect(notification.event.purchase == nil, sourceLocation: sourceLocation)
            #expect(notification.type == "VOIDED_PURCHASE_UNCONFIRMED", sourceLocation: sourceLocation)
            // Kept under Pub/Sub's id: the real void, learned later on voided:<order>, is no duplicate of it.
            #expect(notification.notificationID == messageID, sourceLocation: sourceLocation)
        }
        // A made-up token naming a real order; a real (and canceled) token naming another order;
        // the right token and order while Google still reads the purchase paid and lists no void;
        // an ended subscription, whose state alone says nothing of a refund.
        expectUnconfirmed(try await push("tok-made-up", "GPA.1111-0000-0000-00001", "msg-made-up"), "msg-made-up")
        expectUnconfirmed(try await push("tok-canceled", "GPA.1111-0000-0000-00001", "msg-crossed"), "msg-crossed")
        expectUnconfirmed(try await push("tok-paid", "GPA.1111-0000-0000-00001", "msg-early"), "msg-early")
        expectUnconfirmed(try await push("sub-ended", "GPA.2222-0000-0000-00003", "msg-sub", productType: 1), "msg-sub")

        // Google lists the voids: the listed pairs apply, with Google's time and reason; the list
        // does not lend its order to another token.
        try google.addVoided(token: "tok-paid", orderID: "GPA.1111-0000-0000-00001", reason: 5, voidedAt: voidedAt)
        try google.addVoided(token: "sub-ended", orderID: "GPA.2222-0000-0000-00003", reason: 7, voidedAt: voidedAt)
        expectUnconfirmed(try await push("tok-made-up", "GPA.1111-0000-0000-00001", "msg-made-up-2"), "msg-made-up-2")
        for (token, orderID, productType, reason) in [
            ("tok-paid", "GPA.1111-0000-0000-00001", 2, 5), ("sub-ended", "GPA.2222-0000-0000-00003", 1, 7),
        ] {
            let applied = try await push(token, orderID, "msg-\(token)", productType: productType)
            #expect(applied.type == "VOIDED_PURCHASE")
            #expect(applied.notificationID == "voided:\(orderID)")
            #expect(applied.event.kind == .refunded)
            #expect(applied.event.purchase?.transactionID == orderID)
            #expect(applied.event.purchase?.revocationDate == voidedAt)
            #expect(applied.event.purchase?.revocationReasonCode == reason)
        }
        // Each search started near the push's event time, not 30 days back.
        let starts = google.state.voidedQueries.get().compactMap { $0["startTime"].flatMap { Int64($0) } }
        #expect(
            !starts.isEmpty && starts.allSatisfy { $0 >= Int64(voidedAt.timeIntervalSince1970 * 1000) - 2 * 86_400_000 }
        )
        await google.shutdown()
    }

    @Test func aVoidGoogleCannotBeAskedAboutIsSentAgainNotApplied() async throws {
        let google = try FakeGooglePlay()
        try google.addProduct(token: "tok-paid", orderID: "GPA.1111-0000-0000-00001")
        let provider = try GooglePlayVerify.provider(google)
        google.failFirst("voided", [503, 503, 503])
        let body = try Self.void(
            token: "tok-paid", orderID: "GPA.1111-0000-0000-00001", messageID: "msg-down", at: Date())
        let rejection = await Self.rejection {
            _ = try await provider.receiveNotification(
                Self.request(body, bearer: try google.oidcToken()), registered: Self.registered)
        }
        #expect(rejection?.kind == .retryable)
        await google.shutdown()
    }
}
