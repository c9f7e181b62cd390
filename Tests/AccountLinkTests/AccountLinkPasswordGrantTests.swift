import AccountLink
import Foundation
import OpenSSLCrypto
import PluginTestSupport
import ReceiptCore
import Synchronization
import Testing

/// The password grant against guessing: failures are limited per name tried, whether or not an
/// account has it, and an unknown name costs the same work as a known one.
@Suite struct AccountLinkPasswordGrantTests {
    typealias Flow = AccountLinkFlowTests

    static func signIn(
        _ core: FakeCore, _ username: String, _ password: String, dialect: AccountLink = AccountLink()
    ) async -> RouteResponse {
        let form = "grant_type=password&client_id=rgc_app&username=\(username)&password=\(password)"
        return await core.call(dialect, "POST", "/oauth/token", body: Data(form.utf8))
    }

    /// An account whose password is known: flow c, then its first-password link.
    static func accountWithPassword(_ core: FakeCore) async throws {
        #expect(try await Flow.iap(core, "jws-1001", email: "ada@example.com").status == 200)
        let reset = try AccountLinkMailRulesTests.lastMail(core, path: "/account/reset-password")
        #expect(
            try await AccountLinkMailRulesTests.use(
                core, "/account/reset-password", token: reset.token, password: "right-password"
            ).status == 200)
    }

    @Test func tenFailuresForANameLockItWhetherOrNotItExists() async throws {
        let core = Flow.core()
        try await Self.accountWithPassword(core)
        for name in ["ada%40example.com", "nobody%40example.com"] {
            for _ in 1...10 {
                #expect(await Self.signIn(core, name, "wrong-guess").object["error"] as? String == "invalid_grant")
            }
            let locked = await Self.signIn(core, name, "wrong-guess")
            #expect(locked.status == 429)
            #expect(locked.headers.contains { $0.name == "Retry-After" && Int($0.value).map { $0 > 0 } == true })
        }
        // Locked even with the right password, until the window ends; another name is not.
        #expect(await Self.signIn(core, "ada%40example.com", "right-password").status == 429)
        #expect(await Self.signIn(core, "someone-else", "wrong-guess").object["error"] as? String == "invalid_grant")
    }

    @Test func aSuccessCountsNoFailure() async throws {
        let core = Flow.core()
        try await Self.accountWithPassword(core)
        for _ in 1...12 { #expect(await Self.signIn(core, "ada%40example.com", "right-password").status == 200) }
    }

    /// Timing must not tell which names exist: every sign-in checks the password once, against a
    /// scrypt hash of the same cost, a known name against its account's and an unknown name
    /// against a dummy one (without it an unknown name would cost a database lookup, a hundredth
    /// of a scrypt).
    @Test func anUnknownNameCostsTheSameWorkAsAKnownOne() async throws {
        let core = Flow.core()
        try await Self.accountWithPassword(core)
        let checked = CheckedHashes()
        var dialect = AccountLink()
        dialect.checkPassword = { password, hash in
            checked.append(hash)
            return await Scrypt.verifyPasswordOffThePool(password, hash: hash)
        }
        for name in ["ada%40example.com", "ghost%40example.com", "someone-unknown", "ada%40example.com"] {
            #expect(
                await Self.signIn(core, name, "wrong-guess", dialect: dialect).object["error"] as? String
                    == "invalid_grant")
        }
        let hashes = checked.all
        #expect(hashes.count == 4, "one password check a sign-in, whether or not the name exists")
        // scrypt$N$r$p$salt$hash: the cost is in N, r and p.
        let costs = Set(hashes.map { $0.split(separator: "$").prefix(4).joined(separator: "$") })
        #expect(
            costs == [
                "scrypt$\(Scrypt.Parameters.passwords.n)$\(Scrypt.Parameters.passwords.r)$\(Scrypt.Parameters.passwords.p)"
            ])
        #expect(hashes[0] == hashes[3] && hashes[1] == hashes[2] && hashes[0] != hashes[1])
    }
}

/// The hashes sign-ins checked passwords against, in order.
private final class CheckedHashes: Sendable {
    private let hashes = Mutex<[String]>([])
    func append(_ hash: String) { hashes.withLock { $0.append(hash) } }
    var all: [String] { hashes.withLock { $0 } }
}
