import AccountLink
import AppStoreTestSupport
import Foundation
import OpenSSLCrypto
import Postgres
import ReceiptCore
import TestSupport
import Testing

@testable import ReceiptGate

/// The password grant on a real Postgres: a confirmed address signs in even when an older,
/// unconfirmed account names it too, and failures per name are counted by every process together.
@Suite struct AccountLinkSignIn {
    static func signIn(
        _ port: Int, clientID: String, username: String, password: String
    ) async throws -> RawHTTP.Response {
        let form = "grant_type=password&client_id=\(clientID)&username=\(username)&password=\(password)"
        return try await RawHTTP.request(
            port: port, method: "POST", path: "/oauth/token",
            headers: ["Content-Type": "application/x-www-form-urlencoded"],
            body: Data(form.utf8))
    }

    @Test func anUnconfirmedTwinNeverShadowsAConfirmedAddress() async throws {
        let harness = try await AccountLinkEndToEnd.start()
        defer { harness.stop() }
        let port = harness.client.port
        // Two accounts name one address: the older never confirmed it, the newer did (and has a password).
        for id in ["2000000000150001", "2000000000150002"] {
            #expect(
                try await AccountLinkEndToEnd.iap(
                    port, try AccountLinkEndToEnd.subscription(harness, id), email: "ada@example.com"
                ).status == 200)
        }
        let hash = try Scrypt.hashPassword("ada-password")
        let newer = try await harness.pool.query(
            """
            UPDATE accounts SET email_verified = true, password_hash = \(hash)
            WHERE id = (SELECT id FROM accounts WHERE email = 'ada@example.com' ORDER BY created_at DESC LIMIT 1) RETURNING id
            """)
        let newerID: String = try newer[0].decode("id")
        let answer = try await Self.signIn(
            port, clientID: harness.client.clientID, username: "ada%40example.com", password: "ada-password")
        #expect(answer.status == 200, "\(answer.text)")
        let token = try #require(try answer.json()["access_token"] as? String)
        #expect(try await AccountLinkEndToEnd.userinfo(port, token).json()["sub"] as? String == newerID)
    }

    /// The token endpoint reads forms by the one form rule: a parameter sent twice is an error
    /// (RFC 6749 §3.1), not a choice between the two values, and so is a value that does not decode.
    @Test func aRepeatedOrUndecodableParameterIsRefused() async throws {
        let harness = try await AccountLinkEndToEnd.start()
        defer { harness.stop() }
        let port = harness.client.port
        #expect(
            try await AccountLinkEndToEnd.iap(
                port, try AccountLinkEndToEnd.subscription(harness, "2000000000150101"), email: "bo@example.com"
            ).status == 200)
        let hash = try Scrypt.hashPassword("bo-password")
        _ = try await harness.pool.query(
            "UPDATE accounts SET email_verified = true, password_hash = \(hash) WHERE email = 'bo@example.com'")
        let clientID = harness.client.clientID
        #expect(
            try await Self.signIn(port, clientID: clientID, username: "bo%40example.com", password: "bo-password")
                .status == 200)
        for repeated in ["bo-password&password=guess", "bo-password&username=eve%40example.com", "bo-password%ZZ"] {
            let answer = try await Self.signIn(
                port, clientID: clientID, username: "bo%40example.com", password: repeated)
            #expect(answer.status == 400, "\(repeated): \(answer.text)")
            #expect(try answer.json()["error"] as? String == "invalid_request", "\(repeated)")
        }
    }

    @Test func failuresPerNameAreCountedByEveryProcessTogether() async throws {
        let limits = [
            "accountlink.password.name": ServiceConfiguration.RateLimitOverride(
                limit: 3, window: VerifyHarness.rateLimitWindow)
        ]
        let harness = try await AccountLinkEndToEnd.start(rateLimits: limits)
        defer { harness.stop() }
        let other = try await AccountLinkEndToEnd.service(harness.service.configuration, pki: harness.pki)
        try await other.start()
        defer { Task.detached { await other.shutdown() } }
        let clientID = harness.client.clientID
        for port in [harness.client.port, other.port, harness.client.port] {
            let failed = try await Self.signIn(
                port, clientID: clientID, username: "Ghost%40Example.com", password: "guess")
            #expect(try failed.json()["error"] as? String == "invalid_grant")
        }
        // The same name in other letter case, from the other process: locked.
        let limited = try await Self.signIn(
            other.port, clientID: clientID, username: "ghost%40example.com", password: "guess")
        #expect(limited.status == 429)
        #expect(VerifyHarness.isTheWindowsEnd(limited.headers["retry-after"].flatMap(Int.init)), "\(limited.headers)")
        let elsewhere = try await Self.signIn(
            other.port, clientID: clientID, username: "someone%40example.com", password: "guess")
        #expect(elsewhere.status == 400)
        await other.shutdown()
    }
}
