import AppStore
import Foundation
import GooglePlay
import HiveAxyl
import PluginTestSupport
import ReceiptCore
import Testing

@Suite struct HiveAxylSubscriptionVerify {
    static let path = "/payment/v1/subscription/verify"

    @Test func theAnswerIsTheLedgersLatestPeriod() async throws {
        let fake = Fixture.core()
        let core = SubscriptionLedgerCore(base: fake)
        let dialect = HiveAxylOn(core: core)
        let token = try await Fixture.token(fake)

        // No subscription row yet: the receipt's own period.
        let first = try await fake.verify(Self.path, Fixture.subscriptionBody(), dialect: dialect, token: token)
        #expect(first.code == 100, "\(first.message)")
        let data = try #require(first.data)
        #expect(data["hiveAxylStoreTransactionId"] as? String == "2000000000000101")
        #expect(data["hiveAxylOriginalStoreTransactionId"] as? String == "2000000000000101")
        #expect(data["hiveAxylSubscriptionState"] as? String == "active")
        #expect(data["hiveAxylRefundDate"] is NSNull)
        #expect(data["hiveAxylAutoRenew"] is NSNull)
        #expect(data["hiveAxylDuplicated"] as? Bool == false)
        #expect(data["hiveAxylAccountUuidCompare"] as? Int == 9)
        #expect(data["hiveAxylPurchaseTest"] as? String == "Y")
        #expect(data["hiveAxylProductId"] as? String == "vip.monthly")
        #expect(data.count == 10)

        // A renewal then a refund the ledger learned of: the same receipt now answers with them.
        let expires = Date(timeIntervalSince1970: 1_790_000_000)
        let refunded = Date(timeIntervalSince1970: 1_785_000_000)
        var state = SubscriptionState(
            store: .appStore, environment: .sandbox, originalTransactionID: "2000000000000101", status: .refunded)
        state.productID = "vip.monthly"
        state.latestTransactionID = "2000000000000102"
        state.expiresDate = expires
        state.revocationDate = refunded
        state.autoRenew = false
        core.subscriptions["2000000000000101"] = state
        let again = try await fake.verify(Self.path, Fixture.subscriptionBody(), dialect: dialect, token: token)
        let latest = try #require(again.data)
        #expect(latest["hiveAxylStoreTransactionId"] as? String == "2000000000000102")
        #expect(latest["hiveAxylOriginalStoreTransactionId"] as? String == "2000000000000101")
        #expect(latest["hiveAxylExpiresDate"] as? Int == 1_790_000_000_000)
        #expect(latest["hiveAxylRefundDate"] as? Int == 1_785_000_000_000)
        #expect(latest["hiveAxylSubscriptionState"] as? String == "refunded")
        #expect(latest["hiveAxylAutoRenew"] as? Bool == false)
        #expect(latest["hiveAxylDuplicated"] as? Bool == true)
    }

    @Test(
        arguments: [
            (Fixture.subscriptionBody(country: "XX"), "country"),
            (Fixture.subscriptionBody(country: "KOR"), "country"),
            (Fixture.subscriptionBody(language: "kor"), "language"),
            (Fixture.subscriptionBody(language: "zz"), "language"),
            (Fixture.subscriptionBody("jws-gems"), "axylReceipt"),
            (
                ["providerId": "APPLE", "axylReceipt": "jws-vip", "accountUuid": "a", "requestType": 1],
                "country, language"
            ),
        ] as [([String: any Sendable], String)])
    func badRequestsAre400NamingTheField(body: [String: any Sendable], field: String) async throws {
        let core = Fixture.core()
        let answer = try await core.verify(Self.path, body, token: try await Fixture.token(core))
        #expect(answer.status == 400)
        #expect(answer.code == 4000)
        #expect(answer.message.contains(field), "\(answer.message)")
        #expect(core.recordedRequests.isEmpty)
    }

    @Test func codesAreCaseInsensitive() async throws {
        let core = Fixture.core()
        let answer = try await core.verify(
            Self.path, Fixture.subscriptionBody(country: "kr", language: "KO"), token: try await Fixture.token(core))
        #expect(answer.code == 100)
    }

    @Test func storeTransactionIdMustBeThisReceipts() async throws {
        let core = Fixture.core()
        let token = try await Fixture.token(core)
        var body = Fixture.subscriptionBody()
        body["storeTransactionId"] = "2000000000009999"
        let wrong = try await core.verify(Self.path, body, token: token)
        #expect(wrong.status == 400)
        #expect(wrong.message.contains("storeTransactionId"))
        body["storeTransactionId"] = "2000000000000101"
        #expect(try await core.verify(Self.path, body, token: token).code == 100)
    }

    @Test func aBareGoogleTokenNeedsStoreTransactionId() async throws {
        let core = Fixture.core()
        core.stores.append(GooglePlayProvider.declaration)
        var renewal = VerifiedPurchase(
            store: .googlePlay, environment: .production, transactionID: "GPA.3333-4444-5555-66666..1")
        renewal.originalTransactionID = "GPA.3333-4444-5555-66666"
        renewal.productID = "vip.monthly"
        renewal.kind = .autoRenewableSubscription
        renewal.expiresDate = Date().addingTimeInterval(86_400)
        core.add(evidence: "bare-google-token", proves: renewal)
        let token = try await Fixture.token(core)
        var body = Fixture.subscriptionBody("bare-google-token")
        body["providerId"] = "GOOGLE"
        let missing = try await core.verify(Self.path, body, token: token)
        #expect(missing.status == 400)
        #expect(missing.message.contains("storeTransactionId"))
        body["storeTransactionId"] = "GPA.3333-4444-5555-66666"
        let answer = try await core.verify(Self.path, body, token: token)
        #expect(answer.code == 100, "\(answer.message)")
        #expect(answer.data?["hiveAxylStoreTransactionId"] as? String == "GPA.3333-4444-5555-66666..1")
        #expect(answer.data?["hiveAxylOriginalStoreTransactionId"] as? String == "GPA.3333-4444-5555-66666")
    }
}
