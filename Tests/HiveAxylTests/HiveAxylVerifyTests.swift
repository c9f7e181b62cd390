import AppStore
import Foundation
import GooglePlay
import HiveAxyl
import PluginTestSupport
import ReceiptCore
import Testing

/// The two verify routes on the fake core: the envelope, every data field, the code table.
@Suite struct HiveAxylPurchaseVerify {
    static let path = "/payment/v1/purchase/verify"

    @Test func aNewPurchaseThenItsRestore() async throws {
        let core = Fixture.core()
        let token = try await Fixture.token(core)
        let first = try await core.verify(Self.path, Fixture.purchaseBody(), token: token)
        #expect(first.status == 200)
        #expect(first.code == 100)
        #expect(first.message == "SUCCESS")
        let data = try #require(first.data)
        #expect(data["hiveAxylPurchaseCancelState"] as? Int == 0)
        #expect(data["hiveAxylDuplicated"] as? Bool == false)
        #expect(data["hiveAxylAccountUuidCompare"] as? Int == 1, "UUIDs compare case-insensitively")
        #expect(data["hiveAxylPurchaseTest"] as? String == "Y")
        #expect(data["hiveAxylProductId"] as? String == "gems100")
        #expect(data["hiveAxylQuantity"] as? Int == 2)
        #expect(data["hiveAxylPrice"] as? Double == 0.99)
        #expect(String(decoding: first.body, as: UTF8.self).contains(#""hiveAxylPrice":0.99"#))
        #expect(data["hiveAxylCurrency"] as? String == "USD")
        #expect(data["hiveAxylStoreTransactionId"] as? String == "2000000000000001")
        #expect(data["hiveAxylOriginalStoreTransactionId"] as? String == "2000000000000001")
        #expect(data["hiveAxylPurchaseDate"] as? Int == 1_780_000_000_000)
        #expect(data.count == 11, "every field of the Hive Axyl contract, and only those")

        let restored = try await core.verify(Self.path, Fixture.purchaseBody(requestType: 2), token: token)
        #expect(restored.code == 100)
        #expect(restored.data?["hiveAxylDuplicated"] as? Bool == true)
        #expect(core.recordedRequests.count == 2)
    }

    @Test func accountCompareAndTheTestFlag() async throws {
        let core = Fixture.core()
        let token = try await Fixture.token(core)
        let mismatch = try await core.verify(Self.path, Fixture.purchaseBody(account: "someone-else"), token: token)
        #expect(mismatch.code == 100, "a mismatch is reported, not blocked")
        #expect(mismatch.data?["hiveAxylAccountUuidCompare"] as? Int == 2)
        let none = try await core.verify(Self.path, Fixture.purchaseBody("jws-no-token"), token: token)
        #expect(none.data?["hiveAxylAccountUuidCompare"] as? Int == 9)
        let production = try await core.verify(Self.path, Fixture.purchaseBody("jws-production"), token: token)
        #expect(production.data?["hiveAxylPurchaseTest"] as? String == "N")
    }

    @Test func refundsShowAsCancelStateOne() async throws {
        let core = Fixture.core()
        let token = try await Fixture.token(core)
        let refunded = try await core.verify(Self.path, Fixture.purchaseBody("jws-refunded"), token: token)
        #expect(refunded.data?["hiveAxylPurchaseCancelState"] as? Int == 1)

        #expect(
            try await core.verify(Self.path, Fixture.purchaseBody(), token: token).data?["hiveAxylPurchaseCancelState"]
                as? Int == 0)
        // The ledger learns of a refund later (a store notification): the restore says so.
        core.tell(.refunded, transactionID: "2000000000000001")
        let later = try await core.verify(Self.path, Fixture.purchaseBody(requestType: 2), token: token)
        #expect(later.data?["hiveAxylPurchaseCancelState"] as? Int == 1)
    }

    @Test func appIdAndToken() async throws {
        let core = Fixture.core()
        let token = try await Fixture.token(core)
        for appID in [nil, "other.app", ""] as [String?] {
            let refused = try await core.verify(Self.path, Fixture.purchaseBody(), token: token, appID: appID)
            #expect(refused.status == 403)
            #expect(refused.code == 4030)
            #expect(refused.object["data"] is NSNull)
        }
        // Another client's app id does not open this client's token.
        let rivalToken = try await Fixture.token(core, for: Fixture.rival)
        #expect(try await core.verify(Self.path, Fixture.purchaseBody(), token: rivalToken).status == 403)
        let bad = try await core.verify(Self.path, Fixture.purchaseBody(), token: "not-a-token")
        #expect(bad.status == 401)
        #expect(bad.code == 4010)
        #expect(core.recordedRequests.isEmpty)
    }

    @Test(
        arguments: [
            (["providerId": "APPLE"], "axylReceipt"),
            (
                [
                    "providerId": "AMAZON", "axylReceipt": "jws-gems", "productId": "gems100", "accountUuid": "a",
                    "requestType": 1,
                ], "providerId"
            ),
            (
                [
                    "providerId": "GOOGLE", "axylReceipt": "token", "productId": "gems100", "accountUuid": "a",
                    "requestType": 1,
                ], "providerId GOOGLE"
            ),
            (
                [
                    "providerId": "APPLE", "axylReceipt": "jws-gems", "productId": "gems100", "accountUuid": "a",
                    "requestType": 3,
                ], "requestType"
            ),
            (
                [
                    "providerId": "APPLE", "axylReceipt": "jws-gems", "productId": "gems100", "accountUuid": "a",
                    "requestType": "1",
                ], "requestType"
            ),
            (
                [
                    "providerId": "APPLE", "axylReceipt": "jws-gems", "productId": "gems100", "accountUuid": "a",
                    "requestType": true,
                ], "requestType"
            ),
            (
                [
                    "providerId": "APPLE", "axylReceipt": 12, "productId": "gems100", "accountUuid": "a",
                    "requestType": 1,
                ], "axylReceipt"
            ),
            (
                [
                    "providerId": "APPLE", "axylReceipt": "jws-gems", "productId": "", "accountUuid": "a",
                    "requestType": 1,
                ], "productId"
            ),
            (
                [
                    "providerId": "APPLE", "axylReceipt": "jws-gems", "productId": "gems100", "accountUuid": "a",
                    "requestType": 1, "playerId": ["x"],
                ], "playerId"
            ),
            (
                [
                    "providerId": "APPLE", "axylReceipt": "jws-vip", "productId": "vip.monthly", "accountUuid": "a",
                    "requestType": 1,
                ], "axylReceipt"
            ),
        ] as [([String: any Sendable], String)])
    func badRequestsAre400NamingTheField(body: [String: any Sendable], field: String) async throws {
        let core = Fixture.core()
        let answer = try await core.verify(Self.path, body, token: try await Fixture.token(core))
        #expect(answer.status == 400)
        #expect(answer.code == 4000)
        #expect(answer.message.contains(field), "\(answer.message)")
        #expect(answer.object["data"] is NSNull)
        #expect(core.recordedRequests.isEmpty, "nothing recorded")
    }

    @Test func numericPlayerIdsAreAccepted() async throws {
        let core = Fixture.core()
        var body = Fixture.purchaseBody()
        body["playerId"] = 1234567
        body["serverId"] = "s1"
        let answer = try await core.verify(Self.path, body, token: try await Fixture.token(core))
        #expect(answer.code == 100)
        #expect(core.recordedRequests.first?.playerID == "1234567")
        #expect(core.recordedRequests.first?.serverID == "s1")
    }

    @Test func storeRefusalsInTheEnvelope() async throws {
        let core = Fixture.core()
        core.clients = [
            ClientInfo(
                clientID: "rgc_hive", gameID: 42,
                appIdentifiers: [AppStoreProvider.bundleIDKind.name: ["com.example.game"]], environments: [.sandbox],
                settings: [HiveAxyl.appIDsSetting: ["com.example.game.hive"]]), Fixture.rival,
        ]
        let token = try await Fixture.token(core)
        let cases: [([String: any Sendable], Int, Int)] = [
            (Fixture.purchaseBody("forged"), 422, 4220),
            (Fixture.purchaseBody(productID: "gems500"), 422, 4221),
            (Fixture.purchaseBody("jws-production"), 412, 4120),
            (Fixture.purchaseBody("jws-down"), 502, 5020),
        ]
        for (body, status, code) in cases {
            let answer = try await core.verify(Self.path, body, token: token)
            #expect(answer.status == status)
            #expect(answer.code == code, "\(answer.message)")
            #expect(answer.object["data"] is NSNull)
        }
        #expect(
            try await core.verify(Self.path, Fixture.purchaseBody("forged"), token: token).message.contains(
                "SIGNATURE_INVALID"))
        // Redeemed by this game; another game presenting it is refused.
        #expect(try await core.verify(Self.path, Fixture.purchaseBody(), token: token).code == 100)
        let rival = try await core.verify(
            Self.path, Fixture.purchaseBody(), token: try await Fixture.token(core, for: Fixture.rival),
            appID: "rival.app")
        #expect(rival.status == 409)
        #expect(rival.code == 4090)
    }

    @Test func refusalsOfTheCoreRenderInTheEnvelope() {
        let limited = HiveAxyl().render(RouteRefusal(code: .rateLimited, message: "too many", retryAfter: 3))
        #expect(limited.status == 429)
        #expect(limited.code == 4290)
        #expect(limited.object["data"] is NSNull)
        let unauthorized = HiveAxyl().render(RouteRefusal(code: .unauthorized, message: "no token"))
        #expect(unauthorized.status == 401)
        #expect(unauthorized.code == 4010)
    }

    @Test func googleWorksOnceAGooglePlayProviderIsRegistered() async throws {
        let core = Fixture.core()
        core.stores.append(GooglePlayProvider.declaration)
        var purchase = VerifiedPurchase(
            store: .googlePlay, environment: .production, transactionID: "GPA.1234-5678-9012-34567")
        purchase.productID = "gems100"
        purchase.kind = .consumable
        purchase.accountToken = "acc-7"
        core.add(evidence: "google-token", proves: purchase)
        var body = Fixture.purchaseBody("google-token", account: "acc-7")
        body["providerId"] = "GOOGLE"
        let answer = try await core.verify(Self.path, body, token: try await Fixture.token(core))
        #expect(answer.code == 100, "\(answer.message)")
        #expect(answer.data?["hiveAxylAccountUuidCompare"] as? Int == 1)
        #expect(answer.data?["hiveAxylPurchaseTest"] as? String == "N")
        #expect(answer.data?["hiveAxylPrice"] is NSNull, "the store did not say")
        #expect(core.recordedRequests.first?.store == .googlePlay)
    }
}
