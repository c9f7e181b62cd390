import AppStoreTestSupport
import Foundation
import Postgres
import ReceiptGate
import TestSupport
import Testing

/// `RESCIND_CONSENT` (App Store Server Notifications 2.19): `appData` in place of `data`, with the
/// buyer's signed app transaction. Routed by `appData`'s app, recorded once, and the game told
/// which of its players the buyer's account is (`player.consent_revoked`), when it knows any.
@Suite struct ConsentRevocations {
    static let adminToken = String(repeating: "c", count: 32)
    static let buyer = "704289575718046473"

    /// A notification in `appData`'s shape, signed by `pki` (its app transaction by `signer`).
    static func appDataNotification(
        _ harness: VerifyHarness, type: String = "RESCIND_CONSENT", appTransactionID: String = buyer,
        bundleID: String = "com.example.game", uuid: String = UUID().uuidString.lowercased(),
        signer: AppleTestPKI? = nil, withAppTransaction: Bool = true
    ) async throws -> RawHTTP.Response {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let appTransaction = try (signer ?? harness.pki).sign([
            "receiptType": "Sandbox", "bundleId": bundleID, "appAppleId": 1234, "applicationVersion": "7",
            "receiptCreationDate": now, "originalPurchaseDate": now - 86_400_000, "originalApplicationVersion": "1",
            "appTransactionId": appTransactionID, "originalPlatform": "iOS",
        ])
        var appData: [String: any Sendable] = ["appAppleId": 1234, "bundleId": bundleID, "environment": "Sandbox"]
        if withAppTransaction { appData["signedAppTransactionInfo"] = appTransaction }
        let payload: [String: any Sendable] = [
            "notificationType": type, "notificationUUID": uuid, "version": "2.0", "signedDate": now,
            "appData": appData,
        ]
        let body = #"{"signedPayload":"\#(try harness.pki.sign(payload))"}"#
        return try await RawHTTP.request(
            port: harness.client.port, method: "POST", path: "/v1/notifications/app-store", body: Data(body.utf8))
    }

    static func buy(_ harness: VerifyHarness, _ id: String, player: String, account: String = buyer) async throws {
        let receipt = try harness.pki.sign(
            AppleTestPKI.transaction([
                "transactionId": id, "originalTransactionId": id, "appTransactionId": account,
            ]))
        let answer = try await harness.client.post(
            "/v1/verify", json: ["store": "app_store", "receipt": receipt, "player_id": player])
        #expect(answer.status == 200, "\(answer.text)")
    }

    static func queued(_ harness: VerifyHarness) async throws -> Int {
        try await harness.pool.query(
            "SELECT count(*)::int AS n FROM outbox WHERE event_type = 'player.consent_revoked'"
        ).first?.decode("n", as: Int.self) ?? -1
    }

    static func kept(_ harness: VerifyHarness, type: String) async throws -> [PostgresRow] {
        try await harness.pool.query(
            "SELECT raw_body, decoded::text AS decoded FROM store_notifications WHERE notification_type = \(type)")
    }

    @Test func everyPlayerKnownUnderTheBuyersAccountIsToldOnceAndListed() async throws {
        let receiver = try WebhookReceiver()
        receiver.up.set(true)
        let harness = try await VerifyHarness.start(
            outbox: VerifyHarness.fastOutbox(), adminToken: Self.adminToken, webhookURL: receiver.url)
        defer { harness.stop() }
        receiver.secret.set(harness.client.secret)
        try await Self.buy(harness, "2000000000008001", player: "p-alice")
        try await Self.buy(harness, "2000000000008002", player: "p-bob")
        try await Self.buy(harness, "2000000000008003", player: "p-carol", account: "999999999999")

        let uuid = UUID().uuidString.lowercased()
        let first = try await Self.appDataNotification(harness, uuid: uuid)
        #expect(first.status == 200, "\(first.text)")
        #expect(try first.json()["duplicate"] as? Bool == false)
        try await WebhookDelivery.waitUntil {
            receiver.acknowledged.contains { $0.type == "player.consent_revoked" }
        }
        let delivery = try #require(receiver.acknowledged.first { $0.type == "player.consent_revoked" })
        #expect(delivery.signatureValid)
        let body = try #require(try JSONSerialization.jsonObject(with: delivery.body) as? [String: Any])
        let data = try #require(body["data"] as? [String: Any])
        #expect(data["player_ids"] as? [String] == ["p-alice", "p-bob"])
        #expect(data["app_transaction_id"] as? String == Self.buyer)
        #expect(data["app_identifier"] as? String == "com.example.game")
        #expect(data["environment"] as? String == "sandbox")
        #expect(data["notification_id"] as? String == uuid)
        #expect(data["revoked_at_ms"] as? Int != nil)

        // Apple's retry is a duplicate: recorded once, told once.
        let again = try await Self.appDataNotification(harness, uuid: uuid)
        #expect(again.status == 200)
        #expect(try again.json()["duplicate"] as? Bool == true)
        #expect(try await Self.queued(harness) == 1)

        // Kept raw, with the app transaction decoded for support.
        let kept = try await Self.kept(harness, type: "RESCIND_CONSENT")
        #expect(kept.count == 1)
        #expect(try kept.first?.decode("raw_body", as: Data.self).isEmpty == false)
        #expect(try kept.first?.decode("decoded", as: String.self).contains(Self.buyer) == true)

        let console = ConsoleBrowserSession(port: harness.service.port)
        _ = try await console.signIn(token: Self.adminToken)
        let page = try await console.get("/console/consent")
        #expect(page.status == 200)
        #expect(page.text.contains("p-alice") && page.text.contains("p-bob") && !page.text.contains("p-carol"))
        #expect(page.text.contains("webhook sent"))
        #expect(try await console.get("/console/notifications").text.contains("/console/consent"))
        await harness.service.shutdown()
    }

    @Test func aRevocationNamingNoKnownPlayerIsListedAndSendsNothing() async throws {
        let receiver = try WebhookReceiver()
        receiver.up.set(true)
        let harness = try await VerifyHarness.start(
            outbox: VerifyHarness.fastOutbox(), adminToken: Self.adminToken, webhookURL: receiver.url)
        defer { harness.stop() }
        receiver.secret.set(harness.client.secret)
        try await Self.buy(harness, "2000000000008101", player: "p-dave", account: "111111111111")
        let answer = try await Self.appDataNotification(harness, appTransactionID: "222222222222")
        #expect(answer.status == 200, "\(answer.text)")
        #expect(try await Self.queued(harness) == 0)
        let console = ConsoleBrowserSession(port: harness.service.port)
        _ = try await console.signIn(token: Self.adminToken)
        let page = try await console.get("/console/consent")
        #expect(page.text.contains("222222222222") && page.text.contains("no player known"))
        #expect(!page.text.contains("p-dave"))

        // One that names no app transaction at all is listed too.
        let unnamed = try await Self.appDataNotification(harness, withAppTransaction: false)
        #expect(unnamed.status == 200, "\(unnamed.text)")
        #expect(try await console.get("/console/consent").text.contains("not named"))
        #expect(try await Self.queued(harness) == 0)
        await harness.service.shutdown()
    }

    @Test func aForgedAppTransactionOrAnotherAppIsRefusedAndNothingKept() async throws {
        let harness = try await VerifyHarness.start()
        defer { harness.stop() }
        let stranger = try AppleTestPKI()
        let forged = try await Self.appDataNotification(harness, signer: stranger)
        #expect(forged.status == 401, "\(forged.text)")
        let elsewhere = try await Self.appDataNotification(harness, bundleID: "com.example.other")
        #expect(elsewhere.status == 401, "\(elsewhere.text)")
        #expect(try await Self.kept(harness, type: "RESCIND_CONSENT").isEmpty)
        await harness.service.shutdown()
    }

    @Test func aLaterNotificationInThisShapeIsAcceptedAndKeptRaw() async throws {
        let harness = try await VerifyHarness.start()
        defer { harness.stop() }
        let answer = try await Self.appDataNotification(harness, type: "SOMETHING_APPLE_ADDS_LATER")
        #expect(answer.status == 200, "\(answer.text)")
        #expect(try answer.json()["status"] as? String == "accepted")
        let kept = try await Self.kept(harness, type: "SOMETHING_APPLE_ADDS_LATER")
        #expect(kept.count == 1)
        #expect(try await Self.queued(harness) == 0)
        await harness.service.shutdown()
    }
}
