import AccountLink
import AppStore
import Foundation
import PluginTestSupport
import ReceiptCore
import Testing

/// The dialect on the in-memory fake core: flows a–d of the account-link contract, the switch, header rules,
/// refunds, tokens, and the e-mail links.
@Suite struct AccountLinkFlowTests {
    static let headers = [
        "x-client-app-version": "8.10.123", "x-client-device-model": "mobile", "x-client-os": "ios",
        "x-client-os-version": "17.4", "x-sdk-version": "5.0.123", "content-type": "application/json",
    ]

    static func core() -> FakeCore {
        let core = FakeCore()
        core.clients = [
            ClientInfo(
                clientID: "rgc_app", gameID: 7,
                appIdentifiers: [AppStoreProvider.bundleIDKind.name: ["com.example.game"]], environments: [.sandbox])
        ]
        for id in ["1001", "1002", "1003", "1004"] { core.add(evidence: "jws-\(id)", proves: purchase(id)) }
        var refunded = purchase("1005")
        refunded.revocationDate = Date()
        // A refund carries the store's reason; a revocation without one is a revocation.
        refunded.revocationReason = "refunded_due_to_issue"
        core.add(evidence: "jws-1005", proves: refunded)
        core.add(
            evidence: "forged",
            refusedWith: StoreVerificationError(
                code: .verificationFailed, reason: "BAD_SIGNATURE", message: "bad signature"))
        return core
    }

    static func purchase(_ id: String) -> VerifiedPurchase {
        var purchase = VerifiedPurchase(store: .appStore, environment: .sandbox, transactionID: "\(id)9")
        purchase.originalTransactionID = id
        purchase.productID = "premium"
        return purchase
    }

    static func iap(
        _ core: FakeCore, _ evidence: String, email: String? = nil, token: String? = nil,
        headers extra: [String: String?] = [:]
    ) async throws -> RouteResponse {
        var body: [String: Any] = [
            "apple": ["bundle_id": "com.example.game", "subscription_transaction_jws": evidence]
        ]
        if let email { body["customer_details"] = ["email": email] }
        var headers = Self.headers
        if let token { headers["authorization"] = "Bearer \(token)" }
        for (name, value) in extra { headers[name] = value }
        return await core.call(
            AccountLink(), "POST", "/iap", body: try JSONSerialization.data(withJSONObject: body), headers: headers)
    }

    static func sub(_ core: FakeCore, _ token: String) async throws -> String {
        let claims = try #require(try await core.signer.verifiedClaims(token))
        return try #require((try JSONSerialization.jsonObject(with: claims) as? [String: Any])?["sub"] as? String)
    }

    @Test func flowDCreatesAnAccountAndFlowALinksToTheTokensAccount() async throws {
        let core = Self.core()
        let d = try await Self.iap(core, "jws-1001")
        #expect(d.status == 200)
        #expect(d.object["auto_account_created"] as? Bool == true)
        #expect(d.object["account_switched"] as? Bool == false)
        #expect(d.object["email_confirmation_required"] as? Bool == false)
        #expect(d.object["refresh_token"] is String)
        let token = try #require(d.object["access_token"] as? String)
        let accountID = try await Self.sub(core, token)

        let a = try await Self.iap(core, "jws-1002", token: token)
        #expect(a.status == 200)
        #expect(a.object["auto_account_created"] as? Bool == false)
        #expect(a.object["account_switched"] as? Bool == false)
        #expect(
            try await core.accounts.links(accountID: accountID).map(\.originalTransactionID).sorted() == [
                "1001", "1002",
            ])

        // The same purchase again (a restore) reaches the same account, with or without a token.
        let restore = try await Self.iap(core, "jws-1001")
        let restoreToken = try #require(restore.object["access_token"] as? String)
        #expect(try await Self.sub(core, restoreToken) == accountID)
        #expect(restore.object["auto_account_created"] as? Bool == false)
    }

    @Test func aPurchaseOfAnotherAccountSwitches() async throws {
        let core = Self.core()
        let first = try #require(try await Self.iap(core, "jws-1001").object["access_token"] as? String)
        let second = try #require(try await Self.iap(core, "jws-1002").object["access_token"] as? String)
        let switched = try await Self.iap(core, "jws-1001", token: second)
        #expect(switched.object["account_switched"] as? Bool == true)
        let switchedToken = try #require(switched.object["access_token"] as? String)
        #expect(try await Self.sub(core, switchedToken) == (try await Self.sub(core, first)))
    }

    @Test func flowsBAndCSendMailsWhoseLinksFinishThem() async throws {
        let core = Self.core()
        let c = try await Self.iap(core, "jws-1003", email: "ada@example.com")
        #expect(c.status == 200)
        #expect(c.object["email_confirmation_required"] as? Bool == true)
        #expect(c.object["auto_account_created"] as? Bool == false)
        let resetMail = try #require(core.outbox.last)
        #expect(resetMail.target == .email)
        #expect(resetMail.type == "email.password_reset")
        let mail = try #require(try JSONSerialization.jsonObject(with: resetMail.body) as? [String: String])
        #expect(mail["to"] == "ada@example.com")
        let link = try #require(
            mail["text"]?.split(separator: "\n").first { $0.contains("/account/reset-password?token=") })
        let resetToken = String(try #require(link.split(separator: "=").last))

        let set = await core.call(
            AccountLink(), "POST", "/account/reset-password",
            body: Data("token=\(resetToken)&password=s3cret-pass".utf8),
            headers: ["content-type": "application/x-www-form-urlencoded"])
        #expect(set.status == 200)
        let again = await core.call(
            AccountLink(), "POST", "/account/reset-password",
            body: Data("token=\(resetToken)&password=other-pass".utf8),
            headers: ["content-type": "application/x-www-form-urlencoded"])
        #expect(again.status == 400, "a link works once")

        let grant = await core.call(
            AccountLink(), "POST", "/oauth/token",
            body: Data("grant_type=password&client_id=rgc_app&username=ada%40example.com&password=s3cret-pass".utf8))
        #expect(grant.status == 200)
        let token = try #require(grant.object["access_token"] as? String)
        let wrong = await core.call(
            AccountLink(), "POST", "/oauth/token",
            body: Data("grant_type=password&client_id=rgc_app&username=ada%40example.com&password=guess".utf8))
        #expect(wrong.status == 400)
        #expect(wrong.object["error"] as? String == "invalid_grant")

        // Flow b: the token's account asks for a new address; it is pending until confirmed. The
        // account's address is confirmed, so that address approves and the new one confirms.
        let b = try await Self.iap(core, "jws-1004", email: "ada@new.example.com", token: token)
        #expect(b.object["email_confirmation_required"] as? Bool == true)
        let accountID = try await Self.sub(core, token)
        #expect(try await core.accounts.account(id: accountID)?.pendingEmail == "ada@new.example.com")
        for recipient in ["ada@example.com", "ada@new.example.com"] {
            let confirmToken = try AccountLinkMailRulesTests.mail(core, to: recipient, path: "/account/confirm-email")
            let confirmed = await core.call(
                AccountLink(), "POST", "/account/confirm-email",
                body: try JSONSerialization.data(withJSONObject: ["token": confirmToken]),
                headers: ["content-type": "application/json"])
            #expect(confirmed.status == 200, "\(recipient)")
        }
        let account = try #require(try await core.accounts.account(id: accountID))
        #expect(account.email == "ada@new.example.com")
        #expect(account.emailVerified)
        #expect(account.pendingEmail == nil)
    }

    /// The seed gives the SDK headers as free strings with examples: any printable text up to a
    /// bound is taken; a missing one, a control character or an endless one is refused naming it;
    /// an unusable `x-forwarded-for` is only for fraud review, so it is ignored.
    @Test(
        arguments: [
            ("x-client-app-version", nil, 400), ("x-client-os", nil, 400), ("x-client-os-version", "", 400),
            ("x-sdk-version", nil, 400),
            ("x-client-app-version", "8.10.123 (456)", 200), ("x-client-device-model", "iPhone15,2", 200),
            ("x-client-os", "iOS 17.4", 200),
            ("x-client-os", "beos", 200), ("x-client-os-version", "10.0.1234", 200),
            ("x-client-device-model", "phone\u{7}", 400),
            ("x-client-app-version", "1.0\r\nx-evil: 1", 400),
            ("x-sdk-version", String(repeating: "9", count: 129), 400),
            ("x-forwarded-for", "not-an-ip", 200), ("x-forwarded-for", "192.0.2.7, 10.0.0.1", 200),
            ("authorization", "Basic abc", 400), ("authorization", "Bearer forged.token.here", 401),
        ] as [(String, String?, Int)])
    func everyHeaderRule(name: String, value: String?, status: Int) async throws {
        let core = Self.core()
        let response = try await Self.iap(core, "jws-1001", headers: [name: value])
        #expect(response.status == status)
        if status == 400 { #expect((response.object["message"] as? String)?.contains(name) == true) }
    }

    /// An app's name that no client could register (a NUL, a control character, too long) is the
    /// caller's mistake, named; never a failure of the service.
    @Test(arguments: ["com.example\u{0}.game", "com.example.game\u{202E}", String(repeating: "a", count: 257)])
    func aBundleIDThatNamesNoAppIsRefusedNamingTheField(bundleID: String) async throws {
        let body = try JSONSerialization.data(withJSONObject: [
            "apple": ["bundle_id": bundleID, "subscription_transaction_jws": "jws-1001"]
        ])
        let response = await Self.core().call(AccountLink(), "POST", "/iap", body: body, headers: Self.headers)
        #expect(response.status == 400)
        #expect(response.object["error"] as? String == "INVALID_FIELD")
        #expect((response.object["message"] as? String)?.contains("apple.bundle_id") == true, "\(response.object)")
    }

    @Test func refundedAndForgedPurchasesCreateNothing() async throws {
        let core = Self.core()
        let refunded = try await Self.iap(core, "jws-1005")
        #expect(refunded.status == 422)
        #expect(refunded.object["error"] as? String == "PURCHASE_REFUNDED")
        let forged = try await Self.iap(core, "forged", email: "eve@example.com")
        #expect(forged.status == 422)
        #expect(try await core.accounts.account(email: "eve@example.com", scope: "game:7") == nil)
        #expect(core.outbox.isEmpty)
    }

    @Test func refreshTokensRotateAndAReuseRevokesTheFamily() async throws {
        let core = Self.core()
        let first = try #require(try await Self.iap(core, "jws-1001").object["refresh_token"] as? String)
        func refresh(_ token: String) async -> RouteResponse {
            await core.call(
                AccountLink(), "POST", "/oauth/token",
                body: Data("grant_type=refresh_token&refresh_token=\(token)".utf8))
        }
        let rotated = await refresh(first)
        #expect(rotated.status == 200)
        let second = try #require(rotated.object["refresh_token"] as? String)
        #expect(second != first)
        let reuse = await refresh(first)
        #expect(reuse.object["error"] as? String == "invalid_grant")
        #expect(await refresh(second).status == 400, "the whole family is revoked after a reuse")
    }
}
