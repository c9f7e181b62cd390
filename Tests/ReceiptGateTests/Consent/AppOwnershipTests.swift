import AppStore
import AppStoreTestSupport
import Foundation
import ReceiptCore
import ReceiptGate
import TestSupport
import Testing

/// Who owns a paid game: a device's signed AppTransaction sent to `POST /v1/verify`, or
/// `GET /v1/app-transactions/app_store/{transaction_id}` asking Apple (Get App Transaction Info,
/// the fake on loopback) with any of the player's transaction ids. The buyer's account is kept
/// with the player, so a later consent revocation names that player.
@Suite struct AppOwnershipChecks {
    static let buyer = "704289575718046473"

    static func start(_ apple: FakeAppStoreServerAPI, webhookURL: String? = nil) async throws -> VerifyHarness {
        try await VerifyHarness.start(
            environments: [.sandbox], outbox: VerifyHarness.fastOutbox(), webhookURL: webhookURL, pki: apple.pki,
            appStore: { pki in
                var appStore = AppStoreConfiguration(trustRoots: [pki.root])
                appStore.serverAPIKey = .init(
                    keyID: FakeAppStoreServerAPI.keyID, issuerID: FakeAppStoreServerAPI.issuerID,
                    privateKey: apple.teamKey)
                appStore.serverAPIProductionURL = "http://127.0.0.1:\(apple.production.port)"
                appStore.serverAPISandboxURL = "http://127.0.0.1:\(apple.sandbox.port)"
                appStore.reconcileInterval = nil
                return appStore
            })
    }

    static func appTransaction(_ pki: AppleTestPKI, _ overrides: [String: any Sendable] = [:]) throws -> String {
        var payload: [String: any Sendable] = [
            "receiptType": "Sandbox", "bundleId": "com.example.game", "appAppleId": 1234,
            "applicationVersion": "3.1", "originalApplicationVersion": "1.0",
            "receiptCreationDate": Int64(Date().timeIntervalSince1970 * 1000),
            "originalPurchaseDate": Int64(1_700_000_000_000), "appTransactionId": buyer, "originalPlatform": "iOS",
        ]
        for (key, value) in overrides { payload[key] = value }
        return try pki.sign(payload)
    }

    @Test func aDevicesSignedAppTransactionIsAnsweredWithItsFactsAndKeptWithThePlayer() async throws {
        let apple = try FakeAppStoreServerAPI()
        let receiver = try WebhookReceiver()
        receiver.up.set(true)
        let harness = try await Self.start(apple, webhookURL: receiver.url)
        defer { harness.stop() }
        receiver.secret.set(harness.client.secret)

        let answer = try await harness.client.post(
            "/v1/verify",
            json: ["store": "app_store", "receipt": try Self.appTransaction(apple.pki), "player_id": "p-owner"])
        #expect(answer.status == 200, "\(answer.text)")
        let owned = try #require(try answer.json()["app_transaction"] as? [String: Any])
        #expect(owned["app_transaction_id"] as? String == Self.buyer)
        #expect(owned["environment"] as? String == "sandbox")
        #expect(owned["app_identifier"] as? String == "com.example.game")
        #expect(owned["app_version"] as? String == "3.1")
        #expect(owned["original_purchase_date_ms"] as? Int == 1_700_000_000_000)
        #expect(owned["original_platform"] as? String == "iOS")
        #expect(try answer.json()["player_id"] as? String == "p-owner")
        // Not a purchase: nothing is on the ledger.
        #expect(try await harness.pool.query("SELECT 1 FROM transactions").isEmpty)

        // The player is known under the buyer's account now: a revocation names them.
        #expect(try await ConsentRevocations.appDataNotification(harness).status == 200)
        try await WebhookDelivery.waitUntil { receiver.acknowledged.contains { $0.type == "player.consent_revoked" } }
        let told = try #require(receiver.acknowledged.first { $0.type == "player.consent_revoked" })
        let data = try #require(
            (try JSONSerialization.jsonObject(with: told.body) as? [String: Any])?["data"] as? [String: Any])
        #expect(data["player_ids"] as? [String] == ["p-owner"])

        // Another app's, a forged one, and a production one for a sandbox-only client are refused.
        let other = try await harness.client.post(
            "/v1/verify",
            json: ["store": "app_store", "receipt": try Self.appTransaction(apple.pki, ["bundleId": "com.other"])])
        #expect(other.status == 422, "\(other.text)")
        let forged = try await harness.client.post(
            "/v1/verify", json: ["store": "app_store", "receipt": try Self.appTransaction(try AppleTestPKI())])
        #expect(forged.status == 422, "\(forged.text)")
        let production = try await harness.client.post(
            "/v1/verify",
            json: [
                "store": "app_store", "receipt": try Self.appTransaction(apple.pki, ["receiptType": "Production"]),
            ])
        #expect(production.status == 412, "\(production.text)")
        await harness.service.shutdown()
        await apple.shutdown()
    }

    @Test func aLookupFromAnyOfThePlayersTransactionIdsAsksApple() async throws {
        let apple = try FakeAppStoreServerAPI()
        let harness = try await Self.start(apple)
        defer { harness.stop() }
        try apple.add("2000000000009001", environment: "Sandbox", ["appTransactionId": Self.buyer])
        try apple.addAppTransaction(
            ["appTransactionId": Self.buyer, "originalPlatform": "macOS", "applicationVersion": "5"],
            for: ["2000000000009001", Self.buyer])
        let receipt = try apple.pki.sign(
            AppleTestPKI.transaction([
                "transactionId": "2000000000009001", "originalTransactionId": "2000000000009001",
            ]))
        #expect(
            try await harness.client.post(
                "/v1/verify", json: ["store": "app_store", "receipt": receipt, "player_id": "p-lookup"]
            ).status == 200)

        let found = try await harness.client.get("/v1/app-transactions/app_store/2000000000009001")
        #expect(found.status == 200, "\(found.text)")
        let owned = try #require(try found.json()["app_transaction"] as? [String: Any])
        #expect(owned["app_transaction_id"] as? String == Self.buyer)
        #expect(owned["original_platform"] as? String == "macOS")
        #expect(owned["app_version"] as? String == "5")
        // The ledger's claim of that transaction names the player it is kept with.
        #expect(try found.json()["player_id"] as? String == "p-lookup")
        let kept = try await harness.pool.query(
            "SELECT player_id FROM app_transaction_players WHERE app_transaction_id = \(Self.buyer)")
        #expect(try kept.map { try $0.decode("player_id", as: String.self) } == ["p-lookup"])

        // Apple knows no such transaction: a clear 404; a caller's bad id or player: 400.
        let unknown = try await harness.client.get("/v1/app-transactions/app_store/2000000000009999")
        #expect(unknown.status == 404, "\(unknown.text)")
        #expect(try unknown.json()["error"] as? String == "NOT_FOUND")
        let bad = try await harness.client.get("/v1/app-transactions/app_store/not-an-id")
        #expect(bad.status == 400, "\(bad.text)")
        let badPlayer = try await harness.client.get(
            "/v1/app-transactions/app_store/2000000000009001?player_id=%00")
        #expect(badPlayer.status == 400, "\(badPlayer.text)")
        let unknownStore = try await harness.client.get("/v1/app-transactions/nowhere/2000000000009001")
        #expect(unknownStore.status == 400, "\(unknownStore.text)")
        await harness.service.shutdown()
        await apple.shutdown()
    }
}
