import AccountLink
import AlogameGateway
import AppStore
import Foundation
import ReceiptCore
import Testing
import AppStoreTestSupport
import TestSupport

/// `POST /iap` with a bare `apple.transaction_id`: proven through a local fake of the App Store
/// Server API (what it answers is verified like any StoreKit 2 transaction), 400 without the API,
/// and never looked up by the APIs that did not ask for a transaction id.
@Suite struct AccountLinkTransactionID {
    /// Transaction lookups the fake answered, both environments.
    static func lookups(_ fake: FakeAppStoreServerAPI) -> Int {
        fake.hits("Production /inApps/v1/transactions/{id}") + fake.hits("Sandbox /inApps/v1/transactions/{id}")
    }

    static func iap(_ port: Int, transactionID: String, token: String? = nil) async throws -> RawHTTP.Response {
        var headers = AccountLinkEndToEnd.headers
        if let token { headers["Authorization"] = "Bearer \(token)" }
        let body: [String: Any] = ["apple": ["bundle_id": "com.example.game", "transaction_id": transactionID]]
        return try await RawHTTP.request(port: port, method: "POST", path: "/iap", headers: headers, body: try JSONSerialization.data(withJSONObject: body))
    }

    static func subscription(_ id: String) -> [String: any Sendable] {
        ["originalTransactionId": id, "productId": "premium.monthly", "type": "Auto-Renewable Subscription",
         "expiresDate": Int64(Date().timeIntervalSince1970 * 1000) + 86_400_000]
    }

    @Test func aBareTransactionIDIsLookedUpVerifiedAndLinked() async throws {
        let fake = try FakeAppStoreServerAPI()
        try fake.add("2000000000130001", environment: "Sandbox", Self.subscription("2000000000130001"))
        let harness = try await VerifyHarness.start(environments: [.sandbox], dialects: [AccountLink(), AlogameGateway()], pki: fake.pki) { pki in
            var appStore = AppStoreConfiguration(trustRoots: [pki.root])
            appStore.serverAPIKey = .init(keyID: FakeAppStoreServerAPI.keyID, issuerID: FakeAppStoreServerAPI.issuerID, privateKey: fake.teamKey)
            appStore.serverAPIProductionURL = "http://127.0.0.1:\(fake.production.port)"
            appStore.serverAPISandboxURL = "http://127.0.0.1:\(fake.sandbox.port)"
            return appStore
        }
        defer { harness.stop() }
        let port = harness.service.port

        // Flow d from a transaction id: Apple is asked (production, then sandbox) and an account made.
        let created = try await Self.iap(port, transactionID: "2000000000130001")
        #expect(created.status == 200, "\(created.text)")
        #expect(try created.json()["auto_account_created"] as? Bool == true)
        #expect(fake.hits("Production /inApps/v1/transactions/{id}") == 1)
        #expect(fake.hits("Sandbox /inApps/v1/transactions/{id}") == 1)
        let token = try #require(try created.json()["access_token"] as? String)
        let info = try await AccountLinkEndToEnd.userinfo(port, token).json()
        let entitlements = try #require(info["entitlements"] as? [[String: Any]])
        #expect(entitlements.compactMap { $0["original_transaction_id"] as? String } == ["2000000000130001"])
        // Restored on the same device: the same account, nothing new.
        let accounts = try await harness.count("accounts")
        let again = try await Self.iap(port, transactionID: "2000000000130001", token: token)
        #expect(again.status == 200)
        #expect(try again.json()["account_switched"] as? Bool == false)
        #expect(try again.json()["auto_account_created"] as? Bool == false)
        #expect(try await harness.count("accounts") == accounts)

        // Apple knows no such transaction: 422, nothing made.
        let unknown = try await Self.iap(port, transactionID: "2000000000139999")
        #expect(unknown.status == 422, "\(unknown.text)")
        // What the API answers is verified like any JWS: one signed by another PKI is refused.
        let foreign = try AppleTestPKI().sign(AppleTestPKI.transaction(["transactionId": "2000000000130009", "environment": "Sandbox"]))
        fake.state.known.update { $0["Sandbox", default: [:]]["2000000000130009"] = foreign }
        let forged = try await Self.iap(port, transactionID: "2000000000130009")
        #expect(forged.status == 422, "\(forged.text)")
        #expect(try await harness.count("accounts") == accounts)
        // Not an App Store id at all: 400 naming the field, Apple not asked.
        let hits = Self.lookups(fake)
        let malformed = try await Self.iap(port, transactionID: "12ab")
        #expect(malformed.status == 400)
        #expect((try malformed.json()["message"] as? String)?.contains("apple.transaction_id") == true)
        #expect(Self.lookups(fake) == hits)

        // The native API and the Alogame gateway do not redeem a bare id: refused, Apple not asked.
        let native = try await harness.client.post("/v1/verify", json: ["store": "app_store", "receipt": "2000000000130001"])
        #expect(native.status == 422 || native.status == 400, "\(native.text)")
        let gateway = try await harness.client.post("/iap/gateway/verify", json: ["receipt": "2000000000130001", "product_id": "premium.monthly", "os_id": 2])
        #expect(gateway.status != 200, "\(gateway.text)")
        #expect(Self.lookups(fake) == hits)
        await harness.service.shutdown()
        await fake.shutdown()
    }

    @Test func withoutTheServerAPIABareTransactionIDIs400NamingTheField() async throws {
        let harness = try await VerifyHarness.start(environments: [.sandbox], dialects: [AccountLink()])
        defer { harness.stop() }
        let response = try await Self.iap(harness.service.port, transactionID: "2000000000130001")
        #expect(response.status == 400, "\(response.text)")
        let body = try response.json()
        #expect(body["error"] as? String == "INVALID_FIELD")
        #expect((body["message"] as? String)?.contains("transaction_id") == true)
        #expect(try await harness.count("accounts") == 0)
    }
}
