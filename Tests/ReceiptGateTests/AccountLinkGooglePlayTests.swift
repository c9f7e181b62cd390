import AccountLink
import Foundation
import GooglePlayTestSupport
import ReceiptCore
import TestSupport
import Testing

/// `POST /iap` with `google {package_id, purchase_token}` through the Google Play provider (a
/// local fake of Google's token endpoint and Android Publisher API): flow d, keyed by Google's
/// first order of the purchase-token chain, so renewals and upgrades reach the same account.
@Suite struct AccountLinkGooglePlay {
    static func iap(
        _ port: Int, token purchaseToken: String, bearer: String? = nil, package: String = "com.example.game"
    ) async throws -> RawHTTP.Response {
        var headers = AccountLinkEndToEnd.headers
        headers["X-Client-OS"] = "android"
        if let bearer { headers["Authorization"] = "Bearer \(bearer)" }
        let body: [String: Any] = ["google": ["package_id": package, "purchase_token": purchaseToken]]
        return try await RawHTTP.request(
            port: port, method: "POST", path: "/iap", headers: headers,
            body: try JSONSerialization.data(withJSONObject: body))
    }

    @Test func flowDWithAGooglePurchaseIsKeyedByTheFirstOrderOfTheChain() async throws {
        let harness = try await GooglePlayHarness.start(dialects: [AccountLink()])
        defer { harness.stop() }
        let port = harness.service.port
        // Renewed twice: Google's latest order is ..1, the chain's first order has no suffix.
        try harness.google.addSubscription(token: "sub-chain-1", latestOrderID: "GPA.3311-2222-3333-44444..1")

        let created = try await Self.iap(port, token: "sub-chain-1")
        #expect(created.status == 200, "\(created.text)")
        let body = try created.json()
        #expect(body["auto_account_created"] as? Bool == true)
        #expect(body["email_confirmation_required"] as? Bool == false)
        let access = try #require(body["access_token"] as? String)
        let links = try await harness.pool.query("SELECT store, original_transaction_id FROM account_links")
        #expect(links.count == 1)
        #expect(try links.first?.decode("store", as: String.self) == "google_play")
        #expect(try links.first?.decode("original_transaction_id", as: String.self) == "GPA.3311-2222-3333-44444")
        let info = try await AccountLinkEndToEnd.userinfo(port, access).json()
        let entitlement = try #require((info["entitlements"] as? [[String: Any]])?.first)
        #expect(entitlement["store"] as? String == "google_play")
        #expect(entitlement["original_transaction_id"] as? String == "GPA.3311-2222-3333-44444")
        let account = try #require(info["sub"] as? String)

        // An upgrade on another device: a new purchase token linked to the first. Same chain, same
        // account: its credentials come back, nothing is created.
        try harness.google.addSubscription(
            token: "sub-chain-2", latestOrderID: "GPA.3399-8888-7777-66666", linkedToken: "sub-chain-1")
        let restored = try await Self.iap(port, token: "sub-chain-2")
        #expect(restored.status == 200, "\(restored.text)")
        #expect(try restored.json()["auto_account_created"] as? Bool == false)
        let restoredToken = try #require(try restored.json()["access_token"] as? String)
        #expect(try await AccountLinkEndToEnd.userinfo(port, restoredToken).json()["sub"] as? String == account)
        let withToken = try await Self.iap(port, token: "sub-chain-2", bearer: access)
        #expect(try withToken.json()["account_switched"] as? Bool == false)
        #expect(try await harness.pool.query("SELECT count(*) AS n FROM accounts")[0].decode("n", as: Int.self) == 1)

        // Unknown to Google, or another app's package: refused, nothing created.
        #expect(try await Self.iap(port, token: "sub-nobody").status == 422)
        #expect(try await Self.iap(port, token: "sub-chain-1", package: "com.other.game").status == 404)
        #expect(try await harness.pool.query("SELECT count(*) AS n FROM accounts")[0].decode("n", as: Int.self) == 1)
    }
}
