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
        #expect(try await AccountLinkMailRulesTests.use(core, "/account/reset-password", token: reset.token, password: "right-password").status == 200)
    }

    @Test func tenFailuresForANameLockItWhetherOrNotItExists() async throws {
        let core = Flow.core()
        try await Self.accountWithPassword(core)
        for name in ["ada%40example.com", "nobody%40example.com"] {
            for _ in 1...10 { #expect(await Self.signIn(core, name, "wrong-guess").object["error"] as? String == "invalid_grant") }
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

    /// Timing must not tell which names exist: an unknown name runs a (dummy) scrypt too. Compared
    /// by medians with a wide margin: without the dummy hash an unknown name answers in far under
    /// a tenth of a known one's time.
    @Test func anUnknownNameCostsTheSameWorkAsAKnownOne() async throws {
        let core = Flow.core()
        try await Self.accountWithPassword(core)
        func median(_ name: (Int) -> String) async -> Duration {
            var times: [Duration] = []
            for n in 0..<5 {
                let started = ContinuousClock.now
                _ = await Self.signIn(core, name(n), "wrong-guess")
                times.append(ContinuousClock.now - started)
            }
            return times.sorted()[2]
        }
        let known = await median { _ in "ada%40example.com" }
        let unknown = await median { "ghost\($0)%40example.com" }
        #expect(unknown * 3 > known, "unknown \(unknown), known \(known)")
    }
}
