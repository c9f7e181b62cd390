import AppStoreTestSupport
import Foundation
import OpenSSLCrypto
import ReceiptCore
import ReceiptGate
import TestSupport
import Testing

/// App Store Server Notifications change what the ledger says, exactly once each.
@Suite struct NotificationsDriveTheLedger {
    static func notify(
        _ harness: VerifyHarness, type: String, subtype: String? = nil, transaction: [String: any Sendable],
        renewal: [String: any Sendable]? = nil, uuid: String = UUID().uuidString.lowercased()
    ) async throws -> RawHTTP.Response {
        var data: [String: any Sendable] = [
            "environment": "Sandbox", "bundleId": "com.example.game",
            "signedTransactionInfo": try harness.pki.sign(AppleTestPKI.transaction(transaction)),
        ]
        if let renewal { data["signedRenewalInfo"] = try harness.pki.sign(renewal) }
        var payload: [String: any Sendable] = [
            "notificationType": type, "notificationUUID": uuid, "version": "2.0",
            "signedDate": Int64(Date().timeIntervalSince1970 * 1000), "data": data,
        ]
        if let subtype { payload["subtype"] = subtype }
        let body = #"{"signedPayload":"\#(try harness.pki.sign(payload))"}"#
        return try await RawHTTP.request(
            port: harness.client.port, method: "POST", path: "/v1/notifications/app-store", body: Data(body.utf8))
    }

    static func transaction(_ harness: VerifyHarness, _ id: String) async throws -> [String: Any] {
        try await harness.client.get("/v1/transactions/app_store/\(id)").json()["transaction"] as? [String: Any] ?? [:]
    }

    @Test func refundsAndReversalsChangeTheTransactionOnce() async throws {
        let harness = try await VerifyHarness.start()
        defer { harness.stop() }
        _ = try await harness.service.clients.update(
            harness.client.clientID,
            {
                var s = ClientSettings(); s.webhookURL = "http://127.0.0.1:9/hook"; return s
            }())
        let id = "2000000000002001"
        #expect(
            try await harness.client.post(
                "/v1/verify",
                json: [
                    "store": "app_store",
                    "receipt": try harness.pki.sign(AppleTestPKI.transaction(["transactionId": id])),
                ]
            ).status == 200)

        let refundedAt = Int64(Date().timeIntervalSince1970 * 1000)
        let uuid = UUID().uuidString.lowercased()
        let refund = try await Self.notify(
            harness, type: "REFUND",
            transaction: ["transactionId": id, "revocationDate": refundedAt, "revocationReason": 1], uuid: uuid)
        #expect(refund.status == 200)
        var record = try await Self.transaction(harness, id)
        #expect(record["state"] as? String == "refunded")
        #expect(record["revocation_date_ms"] as? Int == Int(refundedAt))
        #expect(record["revocation_reason"] as? String == "refunded_due_to_issue")

        #expect(
            try await Self.notify(harness, type: "REFUND_REVERSED", transaction: ["transactionId": id]).status == 200)
        record = try await Self.transaction(harness, id)
        #expect(record["state"] as? String == "active")
        #expect(record["revocation_date_ms"] is NSNull)

        // Apple resending the REFUND (same notificationUUID) changes nothing.
        let resent = try await Self.notify(
            harness, type: "REFUND", transaction: ["transactionId": id, "revocationDate": refundedAt], uuid: uuid)
        #expect(try resent.json()["duplicate"] as? Bool == true)
        #expect(try await Self.transaction(harness, id)["state"] as? String == "active")

        let events = try await harness.pool.query("SELECT event_type FROM outbox ORDER BY id").map {
            try $0.decode("event_type", as: String.self)
        }
        #expect(events == ["transaction.verified", "transaction.refunded", "transaction.refund_reversed"])
        await harness.service.shutdown()
    }

    @Test func aReversedRefundReinstatesTheSubscription() async throws {
        let harness = try await VerifyHarness.start()
        defer { harness.stop() }
        let id = "2000000000002101"
        let expires = Int64(Date().timeIntervalSince1970 * 1000) + 86_400_000
        let fields: [String: any Sendable] = [
            "transactionId": id, "originalTransactionId": id, "type": "Auto-Renewable Subscription",
            "productId": "vip.monthly", "expiresDate": expires,
        ]
        #expect(
            try await harness.client.post(
                "/v1/verify",
                json: ["store": "app_store", "receipt": try harness.pki.sign(AppleTestPKI.transaction(fields))]
            ).status == 200)
        #expect(
            try await Self.notify(
                harness, type: "REFUND",
                transaction: fields.merging(["revocationDate": expires - 86_000_000, "revocationReason": 0]) { $1 }
            ).status == 200)
        #expect(
            try await harness.client.get("/v1/subscriptions/app_store/\(id)").json()["status"] as? String == "refunded")
        #expect(try await Self.notify(harness, type: "REFUND_REVERSED", transaction: fields).status == 200)
        let subscription = try await harness.client.get("/v1/subscriptions/app_store/\(id)").json()
        #expect(subscription["status"] as? String == "active")
        #expect(subscription["revocation_date_ms"] is NSNull)
        await harness.service.shutdown()
    }

    @Test func aLaterExpiryLeavesARefundedTransactionRefundedUntilTheRefundIsReversed() async throws {
        let harness = try await VerifyHarness.start()
        defer { harness.stop() }
        let id = "2000000000002201"
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let fields: [String: any Sendable] = [
            "transactionId": id, "originalTransactionId": id, "type": "Auto-Renewable Subscription",
            "productId": "vip.monthly", "expiresDate": now + 3_600_000,
        ]
        #expect(
            try await harness.client.post(
                "/v1/verify",
                json: ["store": "app_store", "receipt": try harness.pki.sign(AppleTestPKI.transaction(fields))]
            ).status == 200)
        let refund = fields.merging(["revocationDate": now, "revocationReason": 1]) { $1 }
        #expect(try await Self.notify(harness, type: "REFUND", transaction: refund).status == 200)

        // The month runs out after the refund: the money was still returned.
        #expect(
            try await Self.notify(harness, type: "EXPIRED", subtype: "VOLUNTARY", transaction: fields).status == 200)
        var record = try await Self.transaction(harness, id)
        #expect(record["state"] as? String == "refunded")
        #expect(record["revocation_date_ms"] as? Int == Int(now))

        // The store's reversal is what undoes a refund; the period is not over, so it is active again.
        #expect(try await Self.notify(harness, type: "REFUND_REVERSED", transaction: fields).status == 200)
        record = try await Self.transaction(harness, id)
        #expect(record["state"] as? String == "active")
        #expect(record["revocation_date_ms"] is NSNull)
        await harness.service.shutdown()
    }

    @Test func subscriptionsRenewFailAndExpire() async throws {
        let harness = try await VerifyHarness.start()
        defer { harness.stop() }
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let first: [String: any Sendable] = [
            "transactionId": "2000000000003001", "originalTransactionId": "2000000000003001",
            "type": "Auto-Renewable Subscription", "productId": "vip.monthly", "expiresDate": now + 60_000,
        ]
        #expect(
            try await harness.client.post(
                "/v1/verify",
                json: ["store": "app_store", "receipt": try harness.pki.sign(AppleTestPKI.transaction(first))]
            ).status == 200)

        var renewed = first
        renewed["transactionId"] = "2000000000003002"
        renewed["expiresDate"] = now + 30 * 86_400_000
        #expect(
            try await Self.notify(
                harness, type: "DID_RENEW", transaction: renewed,
                renewal: [
                    "environment": "Sandbox", "originalTransactionId": "2000000000003001", "autoRenewStatus": 1,
                    "signedDate": now,
                ]
            ).status == 200)
        var subscription = try await harness.client.get("/v1/subscriptions/app_store/2000000000003001").json()
        #expect(subscription["status"] as? String == "active")
        #expect(subscription["expires_date_ms"] as? Int == Int(now + 30 * 86_400_000))
        #expect(subscription["auto_renew"] as? Bool == true)
        #expect(
            (subscription["latest_transaction"] as? [String: Any])?["transaction_id"] as? String == "2000000000003002")
        #expect(try await harness.count("transactions") == 2)

        #expect(
            try await Self.notify(
                harness, type: "DID_FAIL_TO_RENEW", subtype: "GRACE_PERIOD", transaction: renewed,
                renewal: ["environment": "Sandbox", "gracePeriodExpiresDate": now + 86_400_000, "signedDate": now]
            ).status == 200)
        subscription = try await harness.client.get("/v1/subscriptions/app_store/2000000000003001").json()
        #expect(subscription["status"] as? String == "grace_period")
        #expect(subscription["grace_period_expires_date_ms"] as? Int == Int(now + 86_400_000))

        #expect(
            try await Self.notify(harness, type: "EXPIRED", subtype: "VOLUNTARY", transaction: renewed).status == 200)
        subscription = try await harness.client.get("/v1/subscriptions/app_store/2000000000003001").json()
        #expect(subscription["status"] as? String == "expired")
        #expect(try await Self.transaction(harness, "2000000000003002")["state"] as? String == "expired")
        await harness.service.shutdown()
    }

    @Test func aRefundForAPurchaseNeverVerifiedHereIsStillRecorded() async throws {
        let harness = try await VerifyHarness.start()
        defer { harness.stop() }
        #expect(
            try await Self.notify(
                harness, type: "REFUND",
                transaction: [
                    "transactionId": "2000000000004001",
                    "revocationDate": Int64(Date().timeIntervalSince1970 * 1000),
                ]
            ).status == 200)
        #expect(try await Self.transaction(harness, "2000000000004001")["state"] as? String == "refunded")
        await harness.service.shutdown()
    }
}

/// A store notification is applied only for a client that accepts its environment.
@Suite struct NotificationEnvironments {
    @Test func aSandboxRefundNeverReachesAProductionOnlyClient() async throws {
        let harness = try await VerifyHarness.start(
            environments: [.production], webhookURL: "http://127.0.0.1:9/production")
        defer { harness.stop() }
        // Production purchase of the production-only client.
        let id = "2000000000099001"
        let receipt = try harness.pki.sign(
            AppleTestPKI.transaction(["transactionId": id, "originalTransactionId": id, "environment": "Production"]))
        #expect(
            try await harness.client.post("/v1/verify", json: ["store": "app_store", "receipt": receipt]).status == 200)
        // A tester client of the same app accepts sandbox; the sandbox refund of the same id is its business.
        var tester = VerifyHarness.settings(name: "Testers", environments: [.sandbox], gameID: 77)
        tester.webhookURL = "http://127.0.0.1:9/sandbox"
        let testers = try await harness.service.clients.create(tester).client
        let response = try await NotificationsDriveTheLedger.notify(
            harness, type: "REFUND",
            transaction: [
                "transactionId": id, "originalTransactionId": id,
                "revocationDate": Int64(Date().timeIntervalSince1970 * 1000), "revocationReason": 0,
            ])
        #expect(response.status == 200, "\(response.text)")
        let rows = try await harness.pool.query("SELECT environment, state, client_id FROM transactions ORDER BY id")
        #expect(try rows.map { try $0.decode("environment", as: String.self) } == ["production", "sandbox"])
        #expect(try rows[0].decode("state", as: String.self) == "active", "the production purchase is untouched")
        #expect(try rows[1].decode("client_id", as: String.self) == testers.clientID)
        let refunds = try await harness.pool.query(
            "SELECT client_id FROM outbox WHERE event_type = 'transaction.refunded'")
        #expect(try refunds.map { try $0.decode("client_id", as: String.self) } == [testers.clientID])
        await harness.service.shutdown()
    }
}
