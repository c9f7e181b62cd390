import AccountLink
import Foundation
import PluginTestSupport
import ReceiptCore
import Testing

/// A bare `apple.transaction_id` on the fake core: it never signs in or creates an account, links
/// only a purchase made with the caller's own `app_account_token`, never takes a purchase from
/// another account, and its lookups are limited per account.
@Suite struct AccountLinkBareTransactionIDTests {
    typealias Flow = AccountLinkFlowTests

    static func bare(_ core: FakeCore, _ id: String, token: String? = nil) async throws -> RouteResponse {
        var headers = Flow.headers
        if let token { headers["authorization"] = "Bearer \(token)" }
        let body: [String: Any] = [
            "apple": ["bundle_id": "com.example.game", "transaction_id": id],
            "customer_details": ["email": "me@evil.example"],
        ]
        return await core.call(
            AccountLink(), "POST", "/iap", body: try JSONSerialization.data(withJSONObject: body), headers: headers)
    }

    /// A purchase Apple would return for `id`, bought with `accountToken`.
    static func add(_ core: FakeCore, _ id: String, accountToken: String?) {
        var purchase = Flow.purchase(id)
        purchase.transactionID = id
        purchase.accountToken = accountToken
        core.add(evidence: id, proves: purchase)
    }

    @Test func onlyTheCallersOwnPurchaseIsLinkedAndNothingElseHappens() async throws {
        let core = Flow.core()
        let mine = try await Flow.iap(core, "jws-1001")
        let token = try #require(mine.object["access_token"] as? String)
        let appAccountToken = try #require(mine.object["app_account_token"] as? String)
        let victim = try await Flow.iap(core, "jws-1002")
        let victimToken = try #require(victim.object["app_account_token"] as? String)
        Self.add(core, "3001", accountToken: appAccountToken.uppercased())
        Self.add(core, "3002", accountToken: victimToken)
        Self.add(core, "3003", accountToken: nil)
        // Bought with the caller's token, but the victim's device redeemed its receipt first.
        Self.add(core, "3004", accountToken: appAccountToken)
        var redeemed = Flow.purchase("3004")
        redeemed.accountToken = appAccountToken
        core.add(evidence: "jws-3004", proves: redeemed)
        #expect(
            try await Flow.iap(core, "jws-3004", token: try #require(victim.object["access_token"] as? String)).status
                == 200)

        for (id, token) in [("3001", nil), ("3002", nil), ("3002", token), ("3003", token), ("3004", token)]
            as [(String, String?)]
        {
            let refused = try await Self.bare(core, id, token: token)
            #expect(refused.status == 422, "\(id)")
            #expect(refused.object["error"] as? String == "OWNERSHIP_NOT_PROVEN")
            #expect(refused.object["access_token"] == nil)
        }
        #expect(core.outbox.isEmpty, "no mail for a bare id that proved nothing")
        let linked = try await Self.bare(core, "3001", token: token)
        #expect(linked.status == 200)
        #expect(linked.object["account_switched"] as? Bool == false)
        let accountID = try await Flow.sub(core, token)
        #expect(
            try await core.accounts.links(accountID: accountID).map(\.originalTransactionID).sorted() == [
                "1001", "3001",
            ])
    }

    @Test func lookupsAreLimitedPerAccount() async throws {
        let core = Flow.core()
        let token = try #require(try await Flow.iap(core, "jws-1001").object["access_token"] as? String)
        var statuses: [Int] = []
        for n in 0..<21 { statuses.append(try await Self.bare(core, String(4000 + n), token: token).status) }
        #expect(statuses.prefix(20).allSatisfy { $0 == 422 })
        #expect(statuses.last == 429)
    }

    @Test(arguments: ["ada%40example.com%00tail", "%C4%B0da%40example.com", "ada%20smith"])
    func aNameThatIsNotPrintableASCIIIsRefusedBeforeAnyLookup(username: String) async throws {
        let core = Flow.core()
        let response = await core.call(
            AccountLink(), "POST", "/oauth/token",
            body: Data("grant_type=password&client_id=rgc_app&username=\(username)&password=guess".utf8))
        #expect(response.status == 400)
        #expect(response.object["error"] as? String == "invalid_request")
    }

    @Test func attributionWithANULIsTheCallersMistake() async throws {
        let core = Flow.core()
        let body = Data(
            #"{"apple":{"bundle_id":"com.example.game","subscription_transaction_jws":"jws-1001"},"aflyr":{"referrer_id":"a\u0000b"}}"#
                .utf8)
        let response = await core.call(AccountLink(), "POST", "/iap", body: body, headers: Flow.headers)
        #expect(response.status == 400)
        #expect((response.object["message"] as? String)?.contains("aflyr") == true)
    }
}
