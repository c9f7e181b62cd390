import AlogameGateway
import Foundation
import GooglePlay
import GooglePlayTestSupport
import OpenSSLCrypto
import Postgres
import ReceiptCore
import TestSupport
import Testing

@testable import ReceiptGate

/// Google Play through the whole service: native API and the Alogame gateway (`os_id: 1`, driven
/// by the Alogame gateway's Node client), the acknowledgement outbox, RTDN and the voided-purchases poll
/// feeding the same ledger, webhooks and refund callbacks. Only the client's own sealed key works.
@Suite struct GooglePlayEndToEnd {
    static func waitUntil(
        _ condition: () async throws -> Bool, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        try await WebhookDelivery.waitUntil(condition, sourceLocation: sourceLocation)
    }

    @Test func nativeVerifyRecordsOnceAndTheAcknowledgementSurvivesTwoFailures() async throws {
        let harness = try await GooglePlayHarness.start()
        defer { harness.stop() }
        try harness.google.addProduct(token: "tok-native", orderID: "GPA.3301-2345-6789-01234", accountID: "acct-1")
        harness.google.failFirst("acknowledge", [503, 500])
        let response = try await harness.client.post(
            "/v1/verify",
            json: [
                "store": "google_play", "receipt": "tok-native", "product_id": "gems100",
                "app_account_token": "acct-1", "package_name": "com.example.game",
            ])
        #expect(response.status == 200, "\(String(decoding: response.body, as: UTF8.self))")
        let transaction = try #require(try response.json()["transaction"] as? [String: Any])
        #expect(transaction["transaction_id"] as? String == "GPA.3301-2345-6789-01234")
        #expect(transaction["store"] as? String == "google_play")
        #expect(transaction["account_match"] as? String == "match")
        // The acknowledgement was queued with the record and sent on the third try.
        try await Self.waitUntil { harness.google.state.actions.get() == ["acknowledge products/gems100 tok-native"] }
        #expect(harness.google.hits("acknowledge") == 3)
        try await Self.waitUntil {
            try await harness.pool.query("SELECT status FROM outbox WHERE target = 'store_acknowledgement'").first?
                .decode("status", as: String.self) == "delivered"
        }
        // Again: a duplicate, and no second acknowledgement.
        let again = try await harness.client.post(
            "/v1/verify", json: ["store": "google_play", "receipt": "tok-native"])
        #expect(try again.json()["duplicate"] as? Bool == true)
        #expect(
            try await harness.pool.query("SELECT count(*) AS n FROM outbox WHERE target = 'store_acknowledgement'")[0]
                .decode("n", as: Int.self) == 1)
        // Pending, canceled, unknown, another app: refused with their reasons.
        try harness.google.addProduct(token: "tok-pending", orderID: "GPA.9", state: 2)
        let pending = try await harness.client.post(
            "/v1/verify", json: ["store": "google_play", "receipt": "tok-pending"])
        #expect(pending.status == 422)
        #expect((try pending.json()["message"] as? String)?.hasPrefix("PURCHASE_PENDING") == true)
        #expect(
            try await harness.client.post("/v1/verify", json: ["store": "google_play", "receipt": "tok-nobody"]).status
                == 422)
        let other = try await harness.client.post(
            "/v1/verify", json: ["store": "google_play", "receipt": "tok-native", "package_name": "com.other"])
        #expect(try other.json()["error"] as? String == "BUNDLE_MISMATCH")
        // Google denies the key: 502 naming the permission problem.
        try harness.google.addProduct(token: "tok-denied", orderID: "GPA.10")
        harness.google.failFirst("productsv2", [403])
        let denied = try await harness.client.post(
            "/v1/verify", json: ["store": "google_play", "receipt": "tok-denied"])
        #expect(denied.status == 502)
        #expect((try denied.json()["message"] as? String)?.contains("GOOGLE_PERMISSION_DENIED") == true)
    }

    @Test func theAlogameGatewayVerifiesAndroidPurchasesWithTheSeedsNodeClient() async throws {
        let harness = try await GooglePlayHarness.start(settings: [GooglePlayProvider.Setting.consume: ["on"]])
        defer { harness.stop() }
        try harness.google.addProduct(token: "tok-alogame", orderID: "GPA.3301-2345-6789-77777", test: true)
        let body: [String: Any] = [
            "receipt": "tok-alogame", "product_id": "gems100", "os_id": 1, "player_id": "player-001",
        ]
        let (status, json) = try await harness.node(body)[0]
        #expect(status == 200, "\(json)")
        #expect(json["transaction_id"] as? String == "GPA.3301-2345-6789-77777")
        let info = try #require(json["receipt_info"] as? [String: Any])
        #expect(info["platform"] as? String == "android")
        #expect(info["environment"] as? String == "Sandbox")
        #expect(info["quantity"] as? Int == 1)
        #expect(info["purchase_date_ms"] as? Int == 1_716_389_123_000)
        #expect(info["type"] as? String == "Consumable")
        #expect(info["storefront"] as? String == "VN")
        #expect(info["price"] is NSNull && info["currency"] is NSNull)
        #expect(try await harness.node(body)[0].0 == 409)
        // Consumed, as this client asked.
        try await Self.waitUntil { harness.google.state.actions.get() == ["consume products/gems100 tok-alogame"] }
        let mismatch = try await harness.node(["receipt": "tok-alogame", "product_id": "gems500", "os_id": 1])[0]
        #expect(mismatch.0 == 422 && mismatch.1["error"] as? String == "PRODUCT_MISMATCH")
    }

    @Test func notificationsFetchThePurchaseAndDriveTheLedger() async throws {
        let harness = try await GooglePlayHarness.start()
        defer { harness.stop() }
        try harness.google.addSubscription(token: "sub-e2e", latestOrderID: "GPA.1234-5678-9012-34567")
        #expect(
            try await harness.client.post("/v1/verify", json: ["store": "google_play", "receipt": "sub-e2e"]).status
                == 200)
        // Renewed: Google now says order ..0.
        try harness.google.addSubscription(token: "sub-e2e", latestOrderID: "GPA.1234-5678-9012-34567..0")
        let renewal: [String: Any] = [
            "version": "1.0", "packageName": "com.example.game", "eventTimeMillis": "1716389123000",
            "subscriptionNotification": [
                "version": "1.0", "notificationType": 2, "purchaseToken": "sub-e2e",
                "subscriptionId": "vip.monthly",
            ],
        ]
        let first = try await harness.push(renewal, messageID: "pubsub-1")
        #expect(first.status == 200)
        #expect(try first.json()["duplicate"] as? Bool == false)
        #expect(try await harness.push(renewal, messageID: "pubsub-1").json()["duplicate"] as? Bool == true)
        let renewed = try #require(try await harness.transaction("GPA.1234-5678-9012-34567..0"))
        #expect(try renewed.decode("original_transaction_id", as: String.self) == "GPA.1234-5678-9012-34567")
        try await Self.waitUntil {
            harness.receiver.bodies("/hooks").contains { $0["type"] as? String == "subscription.renewed" }
        }
        // A test notification: 200, the ledger unchanged.
        let before = try await harness.pool.query("SELECT count(*) AS n FROM transactions")[0].decode("n", as: Int.self)
        let test = try await harness.push(
            ["version": "1.0", "packageName": "com.example.game", "testNotification": ["version": "1.0"]],
            messageID: "pubsub-t")
        #expect(test.status == 200)
        #expect(
            try await harness.pool.query("SELECT count(*) AS n FROM transactions")[0].decode("n", as: Int.self)
                == before)
        // Forged: 401, nothing recorded.
        let forged = try await RawHTTP.request(
            port: harness.service.port, method: "POST", path: "/v1/notifications/google-play",
            headers: ["Authorization": "Bearer \(try harness.google.oidcToken(audience: "https://elsewhere"))"],
            body: try FakeGooglePlay.pushBody(renewal, messageID: "pubsub-forged"))
        #expect(forged.status == 401)
        #expect(
            try await harness.pool.query(
                "SELECT count(*) AS n FROM store_notifications WHERE notification_id = 'pubsub-forged'")[0]
                .decode("n", as: Int.self) == 0)
    }

    @Test func aVoidedPurchaseBecomesARefundAWebhookAndAnAlogameRefundCallbackOnce() async throws {
        let harness = try await GooglePlayHarness.start(pollEvery: .milliseconds(300))
        defer { harness.stop() }
        try harness.google.addProduct(token: "tok-refund", orderID: "GPA.5555-0000-0000-00001")
        #expect(
            try await harness.client.post("/v1/verify", json: ["store": "google_play", "receipt": "tok-refund"]).status
                == 200)
        // Google refunds it: the purchase now reads canceled, and the void is listed.
        try harness.google.addProduct(token: "tok-refund", orderID: "GPA.5555-0000-0000-00001", state: 1)
        // Voided now: Google lists voids by their time, and the poll has already read up to now.
        let voidedAt = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
        let voidedMillis = Int(voidedAt.timeIntervalSince1970) * 1000
        try harness.google.addVoided(
            token: "tok-refund", orderID: "GPA.5555-0000-0000-00001", reason: 1, voidedAt: voidedAt)
        try await Self.waitUntil {
            try await harness.transaction("GPA.5555-0000-0000-00001")?.decode("state", as: String.self) == "refunded"
        }
        try await Self.waitUntil { !harness.receiver.bodies("/refunds").isEmpty }
        let callback = try #require(harness.receiver.bodies("/refunds").first)
        #expect(callback["transaction_id"] as? String == "GPA.5555-0000-0000-00001")
        #expect(callback["product_id"] as? String == "gems100")
        #expect(callback["revocation_date"] as? Int == voidedMillis)
        #expect(callback["revocation_reason"] as? Int == 1)
        #expect(callback["game_id"] as? Int == 42)
        try await Self.waitUntil {
            harness.receiver.bodies("/hooks").contains { $0["type"] as? String == "transaction.refunded" }
        }
        // The same void pushed by RTDN too, and polled again: still one refund callback.
        let rtdn = try await harness.push(
            [
                "version": "1.0", "packageName": "com.example.game", "eventTimeMillis": String(voidedMillis),
                "voidedPurchaseNotification": [
                    "purchaseToken": "tok-refund", "orderId": "GPA.5555-0000-0000-00001",
                    "productType": 2, "refundType": 1,
                ],
            ], messageID: "pubsub-void")
        #expect(try rtdn.json()["duplicate"] as? Bool == true)
        // Two more polls begun after the push: one ran whole, re-reading the same void.
        let polled = harness.google.hits("voided")
        try await Self.waitUntil { harness.google.hits("voided") >= polled + 2 }
        #expect(
            try await harness.pool.query("SELECT count(*) AS n FROM outbox WHERE target = 'refund_callback'")[0].decode(
                "n", as: Int.self) == 1)
        #expect(harness.receiver.bodies("/refunds").count == 1)
        // A refunded purchase is never answered as a success again.
        let again = try await harness.client.post(
            "/v1/verify", json: ["store": "google_play", "receipt": "tok-refund"])
        #expect(again.status == 422)
    }

    @Test func aPushedRevocationChangesTheLedgerOnlyAsGoogleReadsTheSubscription() async throws {
        let harness = try await GooglePlayHarness.start()
        defer { harness.stop() }
        let order = "GPA.7777-0000-0000-00001"
        try harness.google.addSubscription(token: "sub-rev", latestOrderID: order)
        #expect(
            try await harness.client.post("/v1/verify", json: ["store": "google_play", "receipt": "sub-rev"]).status
                == 200)
        let revocation: [String: Any] = [
            "version": "1.0", "packageName": "com.example.game",
            "eventTimeMillis": String(Int64(Date().timeIntervalSince1970 * 1000)),
            "subscriptionNotification": [
                "version": "1.0", "notificationType": 12, "purchaseToken": "sub-rev",
                "subscriptionId": "vip.monthly",
            ],
        ]
        func count(_ query: PostgresQuery) async throws -> Int {
            try await harness.pool.query(query)[0].decode("n", as: Int.self)
        }
        func subscriptionStatus() async throws -> String? {
            try await harness.pool.query("SELECT status FROM subscriptions WHERE original_transaction_id = \(order)")
                .first?.decode("status", as: String.self)
        }
        // Google still reads it active: answered 200 (Pub/Sub must not retry it forever), kept with
        // Google's answer, and the player keeps what was paid for.
        #expect(try await harness.push(revocation, messageID: "pubsub-rev-1").status == 200)
        #expect(try await harness.transaction(order)?.decode("state", as: String.self) == "active")
        #expect(try await subscriptionStatus() == "active")
        #expect(
            try await count(
                """
                SELECT count(*) AS n FROM store_notifications WHERE notification_id = 'pubsub-rev-1'
                  AND notification_type = 'SUBSCRIPTION_REVOKED_UNCONFIRMED' AND subtype = 'SUBSCRIPTION_STATE_ACTIVE'
                """) == 1)
        // Google cannot be asked: 503, nothing kept, so Pub/Sub sends it again.
        harness.google.failFirst("subscriptionsv2", [503, 503, 503])
        #expect(try await harness.push(revocation, messageID: "pubsub-rev-2").status == 503)
        #expect(
            try await count("SELECT count(*) AS n FROM store_notifications WHERE notification_id = 'pubsub-rev-2'") == 0
        )
        // Google revokes it: the subscription reads expired and the void of its order is listed.
        let revokedAt = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
        try harness.google.addSubscription(
            token: "sub-rev", latestOrderID: order, state: "SUBSCRIPTION_STATE_EXPIRED", expiry: revokedAt,
            autoRenew: false)
        try harness.google.addVoided(token: "sub-rev", orderID: order, reason: 0, voidedAt: revokedAt)
        let applied = try await harness.push(revocation, messageID: "pubsub-rev-2")
        #expect(applied.status == 200)
        #expect(try applied.json()["notification_id"] as? String == "voided:\(order)")
        #expect(try await harness.transaction(order)?.decode("state", as: String.self) == "refunded")
        #expect(try await subscriptionStatus() == "refunded")
        try await Self.waitUntil { !harness.receiver.bodies("/refunds").isEmpty }
        #expect(
            harness.receiver.bodies("/refunds").first?["revocation_date"] as? Int == Int(
                revokedAt.timeIntervalSince1970) * 1000)
        // The voided-purchase push for the same order is the same refund: no second callback is owed.
        let void = try await harness.push(
            [
                "version": "1.0", "packageName": "com.example.game",
                "eventTimeMillis": String(Int64(revokedAt.timeIntervalSince1970 * 1000)),
                "voidedPurchaseNotification": [
                    "purchaseToken": "sub-rev", "orderId": order, "productType": 1, "refundType": 1,
                ],
            ],
            messageID: "pubsub-rev-void")
        #expect(try void.json()["duplicate"] as? Bool == true)
        #expect(try await count("SELECT count(*) AS n FROM outbox WHERE target = 'refund_callback'") == 1)
    }

    @Test func aPushedVoidGoogleDoesNotConfirmLeavesTheLedgerAlone() async throws {
        let harness = try await GooglePlayHarness.start()
        defer { harness.stop() }
        try harness.google.addProduct(token: "tok-kept", orderID: "GPA.6666-0000-0000-00001")
        try harness.google.addProduct(token: "tok-other", orderID: "GPA.6666-0000-0000-00002")
        #expect(
            try await harness.client.post("/v1/verify", json: ["store": "google_play", "receipt": "tok-kept"]).status
                == 200)
        func pushVoid(_ token: String, _ orderID: String, _ messageID: String) async throws -> RawHTTP.Response {
            try await harness.push(
                [
                    "version": "1.0", "packageName": "com.example.game",
                    "eventTimeMillis": String(Int64(Date().timeIntervalSince1970 * 1000)),
                    "voidedPurchaseNotification": [
                        "purchaseToken": token, "orderId": orderID, "productType": 2, "refundType": 1,
                    ],
                ],
                messageID: messageID)
        }
        func refundsQueued() async throws -> Int {
            try await harness.pool.query("SELECT count(*) AS n FROM outbox WHERE event_type = 'transaction.refunded'")[
                0
            ].decode("n", as: Int.self)
        }
        // A made-up token with the real order, and another real token with it: answered 200 (Pub/Sub
        // must not retry them forever) and kept as received, but the purchase stays paid.
        for (token, messageID) in [("tok-made-up", "pubsub-made-up"), ("tok-other", "pubsub-crossed")] {
            #expect(try await pushVoid(token, "GPA.6666-0000-0000-00001", messageID).status == 200)
        }
        #expect(try await harness.transaction("GPA.6666-0000-0000-00001")?.decode("state", as: String.self) == "active")
        #expect(try await harness.transaction("GPA.6666-0000-0000-00002") == nil)
        #expect(try await refundsQueued() == 0)
        let kept = try await harness.pool.query(
            """
            SELECT count(*) AS n FROM store_notifications
            WHERE notification_id IN ('pubsub-made-up', 'pubsub-crossed') AND notification_type = 'VOIDED_PURCHASE_UNCONFIRMED'
            """)
        #expect(try kept[0].decode("n", as: Int.self) == 2)
        // Google lists the void: the same push now refunds the purchase, once.
        try harness.google.addVoided(token: "tok-kept", orderID: "GPA.6666-0000-0000-00001", reason: 0)
        let confirmed = try await pushVoid("tok-kept", "GPA.6666-0000-0000-00001", "pubsub-confirmed")
        #expect(confirmed.status == 200)
        #expect(try confirmed.json()["notification_id"] as? String == "voided:GPA.6666-0000-0000-00001")
        #expect(
            try await harness.transaction("GPA.6666-0000-0000-00001")?.decode("state", as: String.self) == "refunded")
        #expect(try await refundsQueued() == 1)
    }
}

extension GooglePlayHarness {
    /// Runs the Alogame gateway's Node client (the same script as the iOS gateway tests); each response's status and body.
    func node(_ fields: [String: Any]) async throws -> [(Int, [String: Any])] {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "Node/alogame_client.mjs"
        ).path
        let body = String(decoding: try JSONSerialization.data(withJSONObject: fields), as: UTF8.self)
        let result = try await ChildProcess.run(
            "/usr/bin/node", [script],
            environment: [
                "PATH": "/usr/bin:/bin", "GATEWAY_URL": "http://127.0.0.1:\(client.port)", "CLIENT_ID": client.clientID,
                "CLIENT_SECRET": client.secret, "BODY": body, "TIMESTAMP_SHIFT": "0", "SEND_TWICE": "0",
                "NODE_NO_WARNINGS": "1",
            ])
        #expect(result.status == 0, "node failed: \(result.stderr)")
        return try result.stdout.split(separator: "\n").map { line in
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            return (try #require(object["status"] as? Int), object["body"] as? [String: Any] ?? [:])
        }
    }
}
