import AppStoreTestSupport
import Foundation
import HTTPClient
import OpenSSLCrypto
import ReceiptCore
import TestSupport
import Testing

@testable import AppStore

@Suite struct AppStoreServerAPI {
    static let sandbox = AppStoreExpectations(bundleIDs: ["com.example.game"], environments: [.sandbox, .production])

    @Test func transactionInfoIsFetchedWithAValidTokenAndVerifies() async throws {
        let fake = try FakeAppStoreServerAPI()
        try fake.add("2000000000000001", environment: "Sandbox")
        let signed = try await fake.client().transactionInfo("2000000000000001", environment: .sandbox)
        let verifier = AppStoreSignedDataVerifier(trustRoots: [fake.pki.root])
        #expect(try verifier.verifyTransaction(signed, expecting: Self.sandbox).transactionId == "2000000000000001")
        await fake.shutdown()
    }

    @Test func notFoundInProductionFallsBackToSandbox() async throws {
        let fake = try FakeAppStoreServerAPI()
        try fake.add("2000000000000002", environment: "Sandbox")
        let found = try await fake.client().transactionInfoInAnyEnvironment("2000000000000002")
        #expect(found.environment == .sandbox)
        #expect(fake.hits("Production /inApps/v1/transactions/{id}") == 1)
        do {
            _ = try await fake.client().transactionInfoInAnyEnvironment("2000000000000099")
            Issue.record("an unknown transaction was found")
        } catch {
            // Apple's own error is kept.
            #expect(error.isTransactionNotFound)
            #expect(error.status == 404)
            #expect(error.message.hasSuffix(": Transaction id not found."))
            #expect(!error.isRetryable)
        }
        await fake.shutdown()
    }

    @Test func historiesFollowEveryPage() async throws {
        let fake = try FakeAppStoreServerAPI()
        for id in ["2000000000000011", "2000000000000012", "2000000000000013"] {
            try fake.add(id, environment: "Production")
        }
        let history = try await fake.client().transactionHistory("2000000000000011", environment: .production)
        #expect(history.count == 3)
        #expect(fake.hits("Production /inApps/v2/history/{id}") == 3)
        let refunds = try await fake.client().refundHistory("2000000000000011", environment: .production)
        #expect(refunds.count == 2)
        let notifications = try await fake.client().notificationHistory(
            from: Date(timeIntervalSince1970: 1_700_000_000), to: Date(timeIntervalSince1970: 1_700_086_400),
            transactionID: "2000000000000011", environment: .production)
        #expect(notifications.map(\.signedPayload) == ["first", "second:next+page/1"])
        let query = try #require(fake.state.lastNotificationQuery.get())
        #expect(query["startDate"] as? Int == 1_700_000_000_000)
        #expect(query["transactionId"] as? String == "2000000000000011")
        await fake.shutdown()
    }

    @Test func orderLookupAndSubscriptionStatuses() async throws {
        let fake = try FakeAppStoreServerAPI()
        try fake.add("2000000000000021", environment: "Production")
        let order = try await fake.client().lookUpOrder("MQ5VLT9VXT", environment: .production)
        #expect(order.valid)
        #expect(order.signedTransactions.count == 1)
        #expect(try await fake.client().lookUpOrder("NOSUCHORDER", environment: .production).valid == false)
        let statuses = try await fake.client().subscriptionStatuses("2000000000000021", environment: .production)
        #expect(statuses.data?.first?.lastTransactions?.first?.status == .active)
        #expect(statuses.bundleId == "com.example.game")
        await fake.shutdown()
    }

    @Test func rateLimitsAndServerErrorsAreRetriedThenReportedRetryable() async throws {
        let fake = try FakeAppStoreServerAPI()
        try fake.add("2000000000000031", environment: "Production")
        fake.state.failuresFirst.set(["/inApps/v1/transactions/{id}": [429, 503]])
        _ = try await fake.client().transactionInfo("2000000000000031", environment: .production)
        #expect(fake.hits("Production /inApps/v1/transactions/{id}") == 3)

        fake.state.failuresFirst.set(["/inApps/v1/transactions/{id}": [500, 500, 500]])
        do {
            _ = try await fake.client().transactionInfo("2000000000000031", environment: .production)
            Issue.record("succeeded through three server errors")
        } catch {
            #expect(error.isRetryable)
            #expect(error.status == 500)
        }
        await fake.shutdown()
    }

    /// The caller's deadline (the core sets it around a verification's store calls) bounds the
    /// retries: with a second left, a server error is not tried again.
    @Test func aLookupWithOneSecondLeftMakesNoSecondAttempt() async throws {
        let fake = try FakeAppStoreServerAPI()
        try fake.add("2000000000000032", environment: "Production")
        fake.state.failuresFirst.set(["/inApps/v1/transactions/{id}": [503]])
        await #expect(throws: StoreAPIError.self) {
            try await OutboundDeadline.$current.withValue(.now + .seconds(1)) {
                _ = try await fake.client().transactionInfo("2000000000000032", environment: .production)
            }
        }
        #expect(fake.hits("Production /inApps/v1/transactions/{id}") == 1)
        // With time enough, the same failure is tried again and the lookup succeeds.
        fake.state.failuresFirst.set(["/inApps/v1/transactions/{id}": [503]])
        _ = try await OutboundDeadline.$current.withValue(.now + .seconds(30)) {
            try await fake.client().transactionInfo("2000000000000032", environment: .production)
        }
        #expect(fake.hits("Production /inApps/v1/transactions/{id}") == 3)
        await fake.shutdown()
    }

    @Test func tokensAreCheckedAndNeverLeakIntoErrors() async throws {
        let fake = try FakeAppStoreServerAPI()
        var configuration = fake.client().configuration
        configuration.privateKey = try PrivateKey.generateP256()  // not the team's key
        let impostor = AppStoreServerAPIClient(configuration: configuration, http: HTTPClientForTests.fast())
        do {
            _ = try await impostor.transactionInfo("2000000000000041", environment: .production)
            Issue.record("a token signed by another key was accepted")
        } catch {
            #expect(error.status == 401)
            #expect(!error.isRetryable)
            #expect(!error.description.contains("Bearer"))
            #expect(!error.description.contains(try impostor.bearerToken()))
        }
        // Hostile ids never reach the URL.
        await #expect(throws: StoreAPIError.self) {
            try await fake.client().transactionInfo("../../etc", environment: .production)
        }
        await fake.shutdown()
    }

    @Test func theBearerTokenCarriesApplesClaims() throws {
        let key = try PrivateKey.generateP256()
        let client = AppStoreServerAPIClient(
            configuration: .init(keyID: "K1", issuerID: "I1", bundleID: "com.b", privateKey: key),
            http: HTTPClientForTests.fast(), now: { Date(timeIntervalSince1970: 1_700_000_000) })
        let jws = try CompactJWS(parsing: try client.bearerToken())
        #expect(jws.header.alg == "ES256")
        #expect(jws.header.kid == "K1")
        let claims = try #require(try JSONSerialization.jsonObject(with: jws.payload) as? [String: Any])
        #expect(claims["iss"] as? String == "I1")
        #expect(claims["aud"] as? String == "appstoreconnect-v1")
        #expect(claims["bid"] as? String == "com.b")
        #expect(claims["iat"] as? Int == 1_700_000_000)
        #expect(claims["exp"] as? Int == 1_700_000_300)
        #expect(jws.isValidSignature(using: try key.publicKey))
    }

    @Test func p8KeysLoadFromAPath() throws {
        let key = try PrivateKey.generateP256()
        let path = TestDatabase.temporaryDirectory("p8").appendingPathComponent("AuthKey_K1.p8").path
        try key.pemRepresentation().write(toFile: path, atomically: true, encoding: .utf8)
        let configuration = try AppStoreServerAPIClient.Configuration(
            keyID: "K1", issuerID: "I", bundleID: "b", privateKeyPath: path)
        #expect(try configuration.privateKey.publicKey.subjectPublicKeyInfo() == key.publicKey.subjectPublicKeyInfo())
        #expect(throws: CryptoError.self) {
            try AppStoreServerAPIClient.Configuration(
                keyID: "K", issuerID: "I", bundleID: "b", privateKeyPath: "/missing.p8")
        }
    }
}

enum HTTPClientForTests {
    static func fast() -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.retry = .init(maxAttempts: 2, baseDelay: .milliseconds(10), maxDelay: .milliseconds(20))
        configuration.timeout = .seconds(60)  // as FakeAppStoreServerAPI.client: no retry for a slow answer
        return HTTPClient(configuration)
    }
}
