import AccountLink
import AppStore
import AppStoreTestSupport
import Foundation
import Postgres
import ReceiptCore
import TestSupport
import Testing

/// `POST /iap` linking a purchase that carried no `appAccountToken` (bought outside the app) has
/// Apple told the account's UUID with Set App Account Token, through a local fake of the App Store
/// Server API: once per purchase, for its original transaction only, never for a purchase that
/// carried a token or a family-shared one; Apple's refusal is kept and not retried, its 500 is.
@Suite struct AccountLinkSetsAppAccountTokens {
    static let route = "/inApps/v1/transactions/{id}/appAccountToken"

    static func harness(_ fake: FakeAppStoreServerAPI) async throws -> VerifyHarness {
        try await VerifyHarness.start(
            environments: [.sandbox], outbox: VerifyHarness.fastOutbox(), dialects: [AccountLink()], pki: fake.pki
        ) { pki in
            var appStore = AppStoreConfiguration(trustRoots: [pki.root])
            appStore.serverAPIKey = .init(
                keyID: FakeAppStoreServerAPI.keyID, issuerID: FakeAppStoreServerAPI.issuerID, privateKey: fake.teamKey)
            appStore.serverAPIProductionURL = "http://127.0.0.1:\(fake.production.port)"
            appStore.serverAPISandboxURL = "http://127.0.0.1:\(fake.sandbox.port)"
            return appStore
        }
    }

    /// A subscription period as the app's StoreKit signs it and as Apple's API knows it.
    static func purchase(
        _ fake: FakeAppStoreServerAPI, _ id: String, original: String? = nil,
        _ extra: [String: any Sendable] = [:]
    ) throws -> String {
        var fields: [String: any Sendable] = [
            "transactionId": id, "originalTransactionId": original ?? id, "productId": "premium.monthly",
            "type": "Auto-Renewable Subscription",
            "expiresDate": Int64(Date().timeIntervalSince1970 * 1000) + 86_400_000,
        ]
        fields.merge(extra) { _, new in new }
        try fake.add(
            original ?? id, environment: "Sandbox",
            fields.merging(["originalTransactionId": original ?? id]) { _, new in new })
        return try fake.pki.sign(AppleTestPKI.transaction(fields))
    }

    static func outbox(_ harness: VerifyHarness) async throws -> [(status: String, attempts: Int, error: String?)] {
        try await harness.pool.query(
            "SELECT status, attempts, last_error FROM outbox WHERE target = 'store_account_token' ORDER BY id"
        ).map {
            (try $0.decode("status"), try $0.decode("attempts"), try $0.decode("last_error"))
        }
    }

    @Test func aTokenlessPurchaseLinkedToAnAccountIsToldItsTokenOnceForItsOriginalTransaction() async throws {
        let fake = try FakeAppStoreServerAPI()
        let harness = try await Self.harness(fake)
        defer { harness.stop() }
        let port = harness.service.port

        // A renewal the buyer's device holds: Apple is told of the purchase, its original transaction.
        let renewal = try Self.purchase(fake, "2000000000140002", original: "2000000000140001")
        let linked = try await AccountLinkEndToEnd.iap(port, renewal)
        #expect(linked.status == 200, "\(linked.text)")
        let token = try #require(try linked.json()["app_account_token"] as? String)
        let access = try #require(try linked.json()["access_token"] as? String)
        try await WebhookDelivery.waitUntil { !fake.state.accountTokenRequests.get().isEmpty }
        try await OutboxDrain.wait(harness.pool)
        #expect(
            fake.state.accountTokenRequests.get() == [
                AccountTokenRequest(
                    environment: "Sandbox", originalTransactionID: "2000000000140001",
                    appAccountToken: token, contentType: "application/json")
            ])
        #expect(try await Self.outbox(harness).map(\.status) == ["delivered"])

        // The same receipt again, and a later period of the purchase with the account's token: the
        // purchase is linked already and Apple was told, so nothing is sent again.
        let again = try await AccountLinkEndToEnd.iap(port, renewal)
        #expect(again.status == 200)
        #expect(try again.json()["app_account_token"] as? String == token)
        let later = try Self.purchase(fake, "2000000000140003", original: "2000000000140001")
        #expect(try await AccountLinkEndToEnd.iap(port, later, token: access).status == 200)
        try await OutboxDrain.wait(harness.pool)
        #expect(fake.state.accountTokenRequests.get().count == 1)
        #expect(try await Self.outbox(harness).count == 1)
        await harness.service.shutdown()
    }

    @Test func aPurchaseThatCarriedATokenOrIsFamilySharedIsNotSent() async throws {
        let fake = try FakeAppStoreServerAPI()
        let harness = try await Self.harness(fake)
        defer { harness.stop() }
        let port = harness.service.port

        let made = UUID().uuidString.lowercased()
        let withToken = try Self.purchase(fake, "2000000000150001", ["appAccountToken": made])
        #expect(try await AccountLinkEndToEnd.iap(port, withToken).status == 200)
        let shared = try Self.purchase(fake, "2000000000150002", ["inAppOwnershipType": "FAMILY_SHARED"])
        #expect(try await AccountLinkEndToEnd.iap(port, shared).status == 200)
        // One that is owed, so the worker is seen sending while the two above were not sent.
        let owed = try Self.purchase(fake, "2000000000150003")
        #expect(try await AccountLinkEndToEnd.iap(port, owed).status == 200)
        try await WebhookDelivery.waitUntil { !fake.state.accountTokenRequests.get().isEmpty }
        try await OutboxDrain.wait(harness.pool)
        #expect(fake.state.accountTokenRequests.get().map(\.originalTransactionID) == ["2000000000150003"])
        #expect(try await Self.outbox(harness).count == 1)
        await harness.service.shutdown()
    }

    @Test func withoutTheServerAPIKeyNothingIsQueued() async throws {
        let harness = try await AccountLinkEndToEnd.start()
        defer { harness.stop() }
        let answer = try await AccountLinkEndToEnd.iap(
            harness.service.port, try AccountLinkEndToEnd.subscription(harness, "2000000000160001"))
        #expect(answer.status == 200, "\(answer.text)")
        #expect(try await harness.count("account_links") == 1)
        #expect(try await Self.outbox(harness).isEmpty)
        await harness.service.shutdown()
    }

    @Test func applesRefusalIsKeptWithItsCodeAndNotRetried() async throws {
        let fake = try FakeAppStoreServerAPI()
        let harness = try await Self.harness(fake)
        defer { harness.stop() }
        // Signed by the device, but unknown to Apple's API: 404 4040010.
        let unknown = try fake.pki.sign(
            AppleTestPKI.transaction(["transactionId": "2000000000170001", "originalTransactionId": "2000000000170001"])
        )
        #expect(try await AccountLinkEndToEnd.iap(harness.service.port, unknown).status == 200)
        try await WebhookDelivery.waitUntil { try await Self.outbox(harness).first?.status == "dead" }
        try await OutboxDrain.wait(harness.pool)
        let row = try #require(try await Self.outbox(harness).first)
        #expect(row.attempts == 1)
        #expect(row.error?.contains("4040010") == true, "\(row.error ?? "")")
        #expect(fake.hits("Sandbox \(Self.route)") == 1)
        await harness.service.shutdown()
    }

    @Test func applesServerErrorIsTriedAgain() async throws {
        let fake = try FakeAppStoreServerAPI()
        let harness = try await Self.harness(fake)
        defer { harness.stop() }
        // Every attempt of the first send fails (the API client tries three times), then Apple is back.
        fake.state.failuresFirst.set([Self.route: [500, 500, 500]])
        let purchase = try Self.purchase(fake, "2000000000180001")
        #expect(try await AccountLinkEndToEnd.iap(harness.service.port, purchase).status == 200)
        try await WebhookDelivery.waitUntil { try await Self.outbox(harness).first?.status == "delivered" }
        let row = try #require(try await Self.outbox(harness).first)
        #expect(row.attempts == 2)
        #expect(fake.hits("Sandbox \(Self.route)") == 4)
        #expect(fake.state.accountTokenRequests.get().map(\.originalTransactionID) == ["2000000000180001"])
        await harness.service.shutdown()
    }
}
