import Foundation
import ReceiptGate
import TestSupport
import Testing

/// The admin token cannot be guessed at wire speed: the admin API holds back a caller after ten
/// wrong tokens within a minute, by the rule the console's sign-in uses (an IPv6 caller per /64,
/// behind a trusted proxy the address it forwards), while the right token always passes.
@Suite struct AdminTokenGuesses {
    static let token = "the-admin-token-nobody-guesses-0123456789"

    static func admin(_ port: Int, token: String, forwardedFor: String? = nil) async throws -> RawHTTP.Response {
        var headers = ["Authorization": "Bearer \(token)"]
        if let forwardedFor { headers["X-Forwarded-For"] = forwardedFor }
        return try await RawHTTP.request(port: port, path: "/admin/webhooks", headers: headers)
    }

    /// The statuses of `count` wrong tokens, one after another, each said to come from `forwardedFor`.
    static func guesses(_ count: Int, port: Int, forwardedFor: (Int) -> String? = { _ in nil }) async throws -> [Int] {
        var statuses: [Int] = []
        for attempt in 1...count {
            statuses.append(
                try await admin(
                    port, token: "wrong-guess-\(attempt)-of-the-admin-token", forwardedFor: forwardedFor(attempt)
                ).status)
        }
        return statuses
    }

    static let tenRefusedThenHeldBack = Array(repeating: 401, count: 10) + [429]

    @Test func twoThousandWrongTokensAreHeldBackAfterTenAndTheRightOneStillPasses() async throws {
        // The service's clock stands still: however long the guesses take, they all fall in the
        // minute the first one began.
        let standing = Date()
        let harness = try await VerifyHarness.start(adminToken: Self.token, now: { standing })
        defer { harness.stop() }
        let port = harness.service.port
        let statuses = try await Self.guesses(2_000, port: port)
        #expect(Array(statuses.prefix(11)) == Self.tenRefusedThenHeldBack)
        #expect(statuses.dropFirst(10).allSatisfy { $0 == 429 }, "no more than ten wrong tokens are compared a minute")

        let held = try await Self.admin(port, token: "one-more-wrong-guess-of-the-admin-token")
        #expect(held.status == 429)
        #expect(try held.json()["error"] as? String == "RATE_LIMITED")
        let retryAfter = try #require(held.headers["retry-after"].flatMap { Int($0) })
        #expect(retryAfter == 60, "the whole minute is left by the standing clock")

        #expect(
            try await Self.admin(port, token: Self.token).status == 200,
            "the right token passes from the held-back address")
        // The console's sign-in is held back by the same count, and the right token signs in there too.
        let guesser = ConsoleBrowserSession(port: port)
        _ = try await guesser.get("/console/sign-in")
        #expect(
            try await guesser.post("/console/sign-in", [("token", "a-wrong-guess-at-the-console-sign-in")]).status
                == 429)
        #expect(try await ConsoleBrowserSession(port: port).signIn(token: Self.token).status == 303)
    }

    @Test func behindATrustedProxyTheForwardedAddressCountsAndOthersAreNotHeldBack() async throws {
        let proxy = try #require(TrustedProxy("127.0.0.1"))
        let harness = try await VerifyHarness.start(adminToken: Self.token, configure: { $0.trustedProxies = [proxy] })
        defer { harness.stop() }
        let port = harness.service.port
        #expect(
            try await Self.guesses(11, port: port, forwardedFor: { _ in "198.51.100.7" }) == Self.tenRefusedThenHeldBack
        )
        #expect(
            try await Self.admin(port, token: "wrong-guess-from-another-caller", forwardedFor: "198.51.100.8").status
                == 401,
            "another caller behind the same proxy is not held back")
        #expect(
            try await Self.admin(port, token: "wrong-guess-from-the-proxy-itself").status == 401,
            "nor is the proxy's own address")
        #expect(try await Self.admin(port, token: Self.token, forwardedFor: "198.51.100.7").status == 200)
    }

    @Test func anIPv6CallerIsCountedByItsSlash64() async throws {
        let proxy = try #require(TrustedProxy("127.0.0.1"))
        let harness = try await VerifyHarness.start(adminToken: Self.token, configure: { $0.trustedProxies = [proxy] })
        defer { harness.stop() }
        let port = harness.service.port
        // Ten addresses of one /64, then an eleventh of it: the network, not the address, has guessed ten times.
        let statuses = try await Self.guesses(
            11, port: port, forwardedFor: { "2001:db8:1:2:\(String($0, radix: 16))::1" })
        #expect(statuses == Self.tenRefusedThenHeldBack)
        #expect(
            try await Self.admin(port, token: "wrong-guess-from-the-next-network", forwardedFor: "2001:db8:1:3::1")
                .status == 401)
        #expect(try await Self.admin(port, token: Self.token, forwardedFor: "2001:db8:1:2::ffff").status == 200)
    }

    @Test func withoutATrustedProxyAForgedForwardedForChangesNothing() async throws {
        let harness = try await VerifyHarness.start(adminToken: Self.token)
        defer { harness.stop() }
        let statuses = try await Self.guesses(11, port: harness.service.port, forwardedFor: { "203.0.113.\($0)" })
        #expect(statuses == Self.tenRefusedThenHeldBack)
    }
}
