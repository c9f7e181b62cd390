import AccountLink
import Foundation
import PluginTestSupport
import ReceiptCore
import Testing

/// The password grant against guessing: failures are limited per name tried, whether or not an
/// account has it, and an unknown name costs the same work as a known one.
@Suite struct AccountLinkPasswordGrantTests {
    typealias Flow = AccountLinkFlowTests

    static func signIn(_ core: FakeCore, _ username: String, _ password: String) async -> RouteResponse {
        let form = "grant_type=password&client_id=rgc_app&username=\(username)&password=\(password)"
        return await core.call(AccountLink(), "POST", "/oauth/token", body: Data(form.utf8))
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

    /// Timing must not tell which names exist: an unknown name runs a (dummy) scrypt too. Known and
    /// unknown names are asked in turn, so a busy spell of the machine slows both alike, and their
    /// medians compared with a wide margin: without the dummy hash an unknown name costs a database
    /// lookup, a hundredth of a scrypt.
    @Test func anUnknownNameCostsTheSameWorkAsAKnownOne() async throws {
        let core = Flow.core()
        try await Self.accountWithPassword(core)
        _ = await Self.signIn(core, "warm-up%40example.com", "wrong-guess")  // the dummy hash is made on first use
        func timed(_ name: String) async -> Duration {
            let started = ContinuousClock.now
            _ = await Self.signIn(core, name, "wrong-guess")
            return ContinuousClock.now - started
        }
        var known: [Duration] = [], unknown: [Duration] = []
        for n in 0..<7 {
            known.append(await timed("ada%40example.com"))
            unknown.append(await timed("ghost\(n)%40example.com"))
        }
        let (knownMedian, unknownMedian) = (known.sorted()[3], unknown.sorted()[3])
        #expect(unknownMedian * 10 > knownMedian, "unknown \(unknown), known \(known)")
    }
}
