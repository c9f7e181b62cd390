import AccountLink
import AlogameGateway
import AppStore
import AppStoreTestSupport
import Foundation
import ReceiptCore
import TestSupport
import Testing

/// `POST /iap` with a bare `apple.transaction_id`: it proves nothing about who calls, so it links
/// only to the caller's own account, and only a purchase made with that account's
/// `app_account_token`; proven through a local fake of the App Store Server API (what it answers
/// is verified like any StoreKit 2 transaction), 400 without the API, and never looked up by the
/// APIs that did not ask for a transaction id.
@Suite struct AccountLinkTransactionID {
    /// Transaction lookups the fake answered, both environments.
    static func lookups(_ fake: FakeAppStoreServerAPI) -> Int {
        fake.hits("Production /inApps/v1/transactions/{id}") + fake.hits("Sandbox /inApps/v1/transactions/{id}")
    }

    static func iap(_ port: Int, transactionID: String, token: String? = nil) async throws -> RawHTTP.Response {
        var headers = AccountLinkEndToEnd.headers
        if let token { headers["Authorization"] = "Bearer \(token)" }
        let body: [String: Any] = ["apple": ["bundle_id": "com.example.game", "transaction_id": transactionID]]
        return try await RawHTTP.request(
            port: port, method: "POST", path: "/iap", headers: headers,
            body: try JSONSerialization.data(withJSONObject: body))
    }

    static func subscription(_ id: String) -> [String: any Sendable] {
        [
            "originalTransactionId": id, "productId": "premium.monthly", "type": "Auto-Renewable Subscription",
            "expiresDate": Int64(Date().timeIntervalSince1970 * 1000) + 86_400_000,
        ]
    }

    static func harness(_ fake: FakeAppStoreServerAPI) async throws -> VerifyHarness {
        try await VerifyHarness.start(
            environments: [.sandbox], dialects: [AccountLink(), AlogameGateway()], pki: fake.pki
        ) { pki in
            var appStore = AppStoreConfiguration(trustRoots: [pki.root])
            appStore.serverAPIKey = .init(
                keyID: FakeAppStoreServerAPI.keyID, issuerID: FakeAppStoreServerAPI.issuerID, privateKey: fake.teamKey)
            appStore.serverAPIProductionURL = "http://127.0.0.1:\(fake.production.port)"
            appStore.serverAPISandboxURL = "http://127.0.0.1:\(fake.sandbox.port)"
            return appStore
        }
    }

    /// Signs in with a receipt of the account's own: its access token and app_account_token.
    static func signIn(
        _ harness: VerifyHarness, transactionID: String
    ) async throws -> (token: String, appAccountToken: String) {
        let answer = try await AccountLinkEndToEnd.iap(
            harness.service.port, try AccountLinkEndToEnd.subscription(harness, transactionID)
        ).json()
        return (try #require(answer["access_token"] as? String), try #require(answer["app_account_token"] as? String))
    }

    @Test func aBareTransactionIDLinksOnlyThePurchaseMadeForTheCallersOwnAccount() async throws {
        let fake = try FakeAppStoreServerAPI()
        let harness = try await Self.harness(fake)
        defer { harness.stop() }
        let port = harness.service.port
        let (token, appAccountToken) = try await Self.signIn(harness, transactionID: "2000000000130100")
        #expect(UUID(uuidString: appAccountToken) != nil)
        let info = try await AccountLinkEndToEnd.userinfo(port, token).json()
        #expect(info["app_account_token"] as? String == appAccountToken)
        var fields = Self.subscription("2000000000130001")
        fields["appAccountToken"] = appAccountToken.uppercased()
        try fake.add("2000000000130001", environment: "Sandbox", fields)
        let accounts = try await harness.count("accounts")

        // No token: a transaction id signs no one in and makes no account; Apple is not even asked.
        let anonymous = try await Self.iap(port, transactionID: "2000000000130001")
        #expect(anonymous.status == 422, "\(anonymous.text)")
        #expect(try anonymous.json()["error"] as? String == "OWNERSHIP_NOT_PROVEN")
        #expect(try anonymous.json()["access_token"] == nil)
        #expect(Self.lookups(fake) == 0)

        // The owner's token and a purchase made with its app_account_token: looked up, verified, linked.
        let linked = try await Self.iap(port, transactionID: "2000000000130001", token: token)
        #expect(linked.status == 200, "\(linked.text)")
        #expect(try linked.json()["account_switched"] as? Bool == false)
        #expect(try linked.json()["auto_account_created"] as? Bool == false)
        #expect(fake.hits("Sandbox /inApps/v1/transactions/{id}") == 1)
        let entitlements = try #require(
            try await AccountLinkEndToEnd.userinfo(port, token).json()["entitlements"] as? [[String: Any]])
        #expect(
            Set(entitlements.compactMap { $0["original_transaction_id"] as? String }) == [
                "2000000000130100", "2000000000130001",
            ])
        #expect(try await harness.count("accounts") == accounts)

        // Apple knows no such transaction: 422. What the API answers is verified like any JWS.
        #expect(try await Self.iap(port, transactionID: "2000000000139999", token: token).status == 422)
        let foreign = try AppleTestPKI().sign(
            AppleTestPKI.transaction([
                "transactionId": "2000000000130009", "environment": "Sandbox",
                "appAccountToken": appAccountToken,
            ]))
        fake.state.known.update { $0["Sandbox", default: [:]]["2000000000130009"] = foreign }
        #expect(try await Self.iap(port, transactionID: "2000000000130009", token: token).status == 422)
        // Not an App Store id at all: 400 naming the field, Apple not asked.
        let hits = Self.lookups(fake)
        let malformed = try await Self.iap(port, transactionID: "12ab", token: token)
        #expect(malformed.status == 400)
        #expect((try malformed.json()["message"] as? String)?.contains("apple.transaction_id") == true)
        #expect(Self.lookups(fake) == hits)

        // The native API and the Alogame gateway do not redeem a bare id: refused, Apple not asked.
        let native = try await harness.client.post(
            "/v1/verify", json: ["store": "app_store", "receipt": "2000000000130001"])
        #expect(native.status == 422 || native.status == 400, "\(native.text)")
        let gateway = try await harness.client.post(
            "/iap/gateway/verify", json: ["receipt": "2000000000130001", "product_id": "premium.monthly", "os_id": 2])
        #expect(gateway.status != 200, "\(gateway.text)")
        #expect(Self.lookups(fake) == hits)
        #expect(try await harness.count("accounts") == accounts)
        await harness.service.shutdown()
        await fake.shutdown()
    }

    /// The review's two attacks: a victim's transaction id (from a support ticket) yields nothing
    /// of the victim's account, and an attacker's own account cannot claim the victim's purchase
    /// so that the victim's later genuine receipt signs the victim into the attacker's account.
    @Test func aTransactionIDAloneYieldsNothingOfAnotherAccount() async throws {
        let fake = try FakeAppStoreServerAPI()
        let harness = try await Self.harness(fake)
        defer { harness.stop() }
        let port = harness.service.port
        // The victim's account, signed in by the genuine receipt; the same purchase is known to Apple.
        let victimJWS = try AccountLinkEndToEnd.subscription(harness, "2000000000131001")
        let victim = try #require(try await AccountLinkEndToEnd.iap(port, victimJWS).json()["access_token"] as? String)
        try fake.add("2000000000131001", environment: "Sandbox", Self.subscription("2000000000131001"))
        try fake.add("2000000000131002", environment: "Sandbox", Self.subscription("2000000000131002"))
        let (attacker, _) = try await Self.signIn(harness, transactionID: "2000000000131099")
        let accounts = try await harness.count("accounts")

        // Takeover: no token (or the attacker's own) plus the victim's id and the attacker's address.
        for token in [nil, attacker] as [String?] {
            var headers = AccountLinkEndToEnd.headers
            if let token { headers["Authorization"] = "Bearer \(token)" }
            let body: [String: Any] = [
                "apple": ["bundle_id": "com.example.game", "transaction_id": "2000000000131001"],
                "customer_details": ["email": "me@evil.example"],
            ]
            let answer = try await RawHTTP.request(
                port: port, method: "POST", path: "/iap", headers: headers,
                body: try JSONSerialization.data(withJSONObject: body))
            #expect(answer.status == 422, "\(answer.text)")
            #expect(try answer.json()["error"] as? String == "OWNERSHIP_NOT_PROVEN")
            #expect(try answer.json()["access_token"] == nil)
        }
        #expect(try await harness.count("outbox WHERE target = 'email'") == 0, "no mail to the attacker")
        #expect(try await harness.count("accounts") == accounts)

        // The reverse: the attacker claims a purchase nobody linked yet; the victim's receipt later
        // makes the victim an account of the victim's own.
        let claim = try await Self.iap(port, transactionID: "2000000000131002", token: attacker)
        #expect(claim.status == 422, "\(claim.text)")
        let later = try await AccountLinkEndToEnd.iap(
            port, try AccountLinkEndToEnd.subscription(harness, "2000000000131002")
        ).json()
        #expect(later["auto_account_created"] as? Bool == true)
        let attackerInfo = try await AccountLinkEndToEnd.userinfo(port, attacker).json()
        let claimed = (attackerInfo["entitlements"] as? [[String: Any]] ?? []).compactMap {
            $0["original_transaction_id"] as? String
        }
        #expect(claimed == ["2000000000131099"])
        let victimInfo = try await AccountLinkEndToEnd.userinfo(port, victim).json()
        #expect(victimInfo["email"] == nil || victimInfo["email"] is NSNull)
        await harness.service.shutdown()
        await fake.shutdown()
    }

    @Test func withoutTheServerAPIABareTransactionIDIs400NamingTheField() async throws {
        let harness = try await VerifyHarness.start(environments: [.sandbox], dialects: [AccountLink()])
        defer { harness.stop() }
        let token = try #require(
            try await AccountLinkEndToEnd.iap(
                harness.service.port, try AccountLinkEndToEnd.subscription(harness, "2000000000130200")
            )
            .json()["access_token"] as? String)
        let accounts = try await harness.count("accounts")
        let response = try await Self.iap(harness.service.port, transactionID: "2000000000130001", token: token)
        #expect(response.status == 400, "\(response.text)")
        let body = try response.json()
        #expect(body["error"] as? String == "INVALID_FIELD")
        #expect((body["message"] as? String)?.contains("transaction_id") == true)
        #expect(try await harness.count("accounts") == accounts)
    }
}
