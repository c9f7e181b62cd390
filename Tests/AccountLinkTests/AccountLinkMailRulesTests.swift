import AccountLink
import AppStore
import Foundation
import OpenSSLCrypto
import PluginTestSupport
import ReceiptCore
import Testing

/// What a sign-in by receipt may do to an account's address and password: a confirmed address
/// approves its own change, a link works only for the state it was issued for (one pending
/// confirmation per account), mail is limited per account and per recipient, and only a whole,
/// plain address is mailed at all.
@Suite struct AccountLinkMailRulesTests {
    typealias Flow = AccountLinkFlowTests

    static func core() -> FakeCore {
        let core = Flow.core()
        for id in 2001...2012 { core.add(evidence: "jws-\(id)", proves: Flow.purchase(String(id))) }
        return core
    }

    /// The one-time token in the last mail of the outbox, and where that mail went.
    static func lastMail(_ core: FakeCore, path: String) throws -> (to: String, token: String) {
        let last = try #require(core.outbox.last)
        let mail = try #require(try JSONSerialization.jsonObject(with: last.body) as? [String: String])
        let line = try #require(mail["text"]?.split(separator: "\n").first { $0.contains("\(path)?token=") })
        return (try #require(mail["to"]), String(try #require(line.split(separator: "=").last)))
    }

    static func use(
        _ core: FakeCore, _ path: String, token: String, password: String? = nil
    ) async throws -> RouteResponse {
        var body = ["token": token]
        if let password { body["password"] = password }
        return await core.call(
            AccountLink(), "POST", path, body: try JSONSerialization.data(withJSONObject: body),
            headers: ["content-type": "application/json"])
    }

    /// An account made by flow c, its address confirmed through the first-password mail.
    static func confirmedAccount(
        _ core: FakeCore, evidence: String, email: String
    ) async throws -> (token: String, accountID: String) {
        let created = try await Flow.iap(core, evidence, email: email)
        #expect(created.status == 200)
        let reset = try lastMail(core, path: "/account/reset-password")
        #expect(reset.to == email)
        #expect(
            try await use(core, "/account/reset-password", token: reset.token, password: "owner-password").status == 200
        )
        let token = try #require(created.object["access_token"] as? String)
        return (token, try await Flow.sub(core, token))
    }

    /// The mail of the outbox sent to `recipient` most recently, with its link's token.
    static func mail(_ core: FakeCore, to recipient: String, path: String) throws -> String {
        for message in core.outbox.reversed() {
            guard let mail = try JSONSerialization.jsonObject(with: message.body) as? [String: String],
                mail["to"] == recipient,
                let line = mail["text"]?.split(separator: "\n").first(where: { $0.contains("\(path)?token=") })
            else { continue }
            return String(try #require(line.split(separator: "=").last))
        }
        throw LinkNotFound(recipient: recipient)
    }

    struct LinkNotFound: Error { let recipient: String }

    @Test func aReceiptSignInCannotChangeAConfirmedAddressWithoutThatAddressApproving() async throws {
        let core = Self.core()
        let (_, accountID) = try await Self.confirmedAccount(core, evidence: "jws-2001", email: "owner@example.com")
        // Someone holding the purchase signs in with it and asks for their own address.
        let takeover = try await Flow.iap(core, "jws-2001", email: "thief@evil.example")
        #expect(takeover.status == 200)
        #expect(takeover.object["email_confirmation_required"] as? Bool == true)
        let approval = try Self.mail(core, to: "owner@example.com", path: "/account/confirm-email")
        let confirmation = try Self.mail(core, to: "thief@evil.example", path: "/account/confirm-email")
        // The new address's own link waits for the confirmed address (and stays usable).
        let early = try await Self.use(core, "/account/confirm-email", token: confirmation, password: "thief-password")
        #expect(early.status == 409)
        #expect(early.object["error"] as? String == "APPROVAL_PENDING")
        var account = try #require(try await core.accounts.account(id: accountID))
        #expect(account.email == "owner@example.com" && account.emailVerified)
        #expect(Scrypt.verifyPassword("owner-password", hash: try #require(account.passwordHash)))
        // Only the owner's approval and then the new address's confirmation move it.
        #expect(try await Self.use(core, "/account/confirm-email", token: approval).status == 200)
        #expect(try await core.accounts.account(id: accountID)?.email == "owner@example.com")
        #expect(try await Self.use(core, "/account/confirm-email", token: confirmation).status == 200)
        account = try #require(try await core.accounts.account(id: accountID))
        #expect(account.email == "thief@evil.example" && account.emailVerified && account.pendingEmail == nil)
    }

    /// The reverse: an attacker's own confirmed account asks for a victim's address. Approving it
    /// from the attacker's own mailbox is not enough; the victim's address is never confirmed.
    @Test func approvingFromOnesOwnAddressDoesNotConfirmSomeoneElses() async throws {
        let core = Self.core()
        let (token, accountID) = try await Self.confirmedAccount(
            core, evidence: "jws-2010", email: "attacker@evil.example")
        _ = try await Flow.iap(core, "jws-2011", email: "victim@example.com", token: token)
        let approval = try Self.mail(core, to: "attacker@evil.example", path: "/account/confirm-email")
        #expect(try await Self.use(core, "/account/confirm-email", token: approval).status == 200)
        let account = try #require(try await core.accounts.account(id: accountID))
        #expect(account.email == "attacker@evil.example")
        #expect(try await core.accounts.account(email: "victim@example.com", scope: "game:7") == nil)
    }

    @Test func anAddressConfirmedForOneAccountIsNotConfirmedForAnother() async throws {
        let core = Self.core()
        _ = try await Self.confirmedAccount(core, evidence: "jws-2012", email: "owner@example.com")
        let other = try await Flow.iap(core, "jws-2009")
        let otherID = try await Flow.sub(core, try #require(other.object["access_token"] as? String))
        _ = try await Flow.iap(core, "jws-2009", email: "OWNER@example.com")
        let link = try Self.mail(core, to: "OWNER@example.com", path: "/account/confirm-email")
        let taken = try await Self.use(core, "/account/confirm-email", token: link)
        #expect(taken.status == 409)
        #expect(taken.object["error"] as? String == "EMAIL_TAKEN")
        #expect(try await core.accounts.account(id: otherID)?.emailVerified == false)
    }

    @Test func aLinkWorksOnlyForTheOnePendingAddressAndNeverReplacesAConfirmedOne() async throws {
        let core = Self.core()
        // Flow c: an account with an unconfirmed address and its first-password link.
        let created = try await Flow.iap(core, "jws-2002", email: "first@example.com")
        let accountID = try await Flow.sub(core, try #require(created.object["access_token"] as? String))
        let reset = try Self.lastMail(core, path: "/account/reset-password")
        // Two later requests for other addresses: the newer one is the account's one pending confirmation.
        _ = try await Flow.iap(core, "jws-2002", email: "second@example.com")
        let second = try Self.lastMail(core, path: "/account/confirm-email")
        _ = try await Flow.iap(core, "jws-2002", email: "third@example.com")
        let third = try Self.lastMail(core, path: "/account/confirm-email")
        #expect(try await core.accounts.account(id: accountID)?.pendingEmail == "third@example.com")
        let stale = try await Self.use(core, "/account/confirm-email", token: second.token)
        #expect(stale.status == 400)
        #expect(stale.object["error"] as? String == "INVALID_LINK")
        // The first address is confirmed through its own link; the pending link alone may no longer replace it.
        #expect(
            try await Self.use(core, "/account/reset-password", token: reset.token, password: "first-password").status
                == 200)
        let replaced = try await Self.use(core, "/account/confirm-email", token: third.token)
        #expect(replaced.status == 409)
        let account = try #require(try await core.accounts.account(id: accountID))
        #expect(account.email == "first@example.com" && account.emailVerified)
    }

    /// Over a mail limit the purchase is still linked and answered, with no mail: nobody can lock
    /// an address out of its own sign-in by spending its budget.
    @Test func mailIsLimitedPerAccountAndPerRecipient() async throws {
        let core = Self.core()
        _ = try await Flow.iap(core, "jws-2003")
        var answers: [RouteResponse] = []
        for n in 1...4 { answers.append(try await Flow.iap(core, "jws-2003", email: "n\(n)@example.com")) }
        #expect(answers.allSatisfy { $0.status == 200 })
        #expect(answers.map { $0.object["email_confirmation_required"] as? Bool } == [true, true, true, false])
        #expect(core.outbox.filter { $0.target == .email }.count == 3, "one purchase cannot mail without bound")

        // One inbox: new accounts from other purchases, all naming the same address.
        var toOneAddress: [Int] = []
        for id in 2004...2007 {
            toOneAddress.append(try await Flow.iap(core, "jws-\(id)", email: "victim@example.com").status)
        }
        #expect(toOneAddress == [200, 200, 200, 200])
        let recipients = core.outbox.compactMap {
            (try? JSONSerialization.jsonObject(with: $0.body) as? [String: String])?["to"]
        }
        #expect(recipients.filter { $0 == "victim@example.com" }.count == 3)
    }

    @Test(arguments: [
        "ada@example.com\n", "ada@example.com\r\n", "ada@example.com\r\nBcc: x@evil.example", "a\u{0}da@example.com",
        "ada@exam ple.com", "ada@example", "@example.com", "ada@@example.com", "ada@example..com", "<ada@example.com>",
    ])
    func onlyAWholePlainAddressIsTaken(email: String) async throws {
        let core = Self.core()
        let response = try await Flow.iap(core, "jws-2008", email: email)
        #expect(response.status == 400)
        #expect(response.object["error"] as? String == "INVALID_FIELD")
        #expect(core.outbox.isEmpty)
    }

    @Test func aTransactionIDBesideAReceiptNamesTheOneToLink() async throws {
        let core = Self.core()
        func iap(_ transactionID: String) async throws -> RouteResponse {
            let body: [String: Any] = [
                "apple": [
                    "bundle_id": "com.example.game", "subscription_transaction_jws": "jws-2009",
                    "transaction_id": transactionID,
                ]
            ]
            return await core.call(
                AccountLink(), "POST", "/iap", body: try JSONSerialization.data(withJSONObject: body),
                headers: Flow.headers)
        }
        let elsewhere = try await iap("2000000000000042")
        #expect(elsewhere.status == 422)
        #expect(
            try await core.accounts.linkedAccount(
                PurchaseKey(store: .appStore, originalTransactionID: "2009"), scope: "game:7") == nil)
        // The receipt holds it (as the original of its chain): linked.
        #expect(try await iap("2009").status == 200)
        #expect(
            try await core.accounts.linkedAccount(
                PurchaseKey(store: .appStore, originalTransactionID: "2009"), scope: "game:7") != nil)
    }
}
