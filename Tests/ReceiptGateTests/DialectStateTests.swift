import AppStore
import AppStoreTestSupport
import Foundation
import PluginTestSupport
import Postgres
import ReceiptCore
import TestSupport
import Testing

@testable import ReceiptGate

/// The core contract from a dialect's side: `StampCardDialect` (PluginTestSupport, which cannot
/// even import Postgres) keeps accounts, purchase links and tokens through the core's protocols
/// and declares a shared rate limit. The same dialect runs on the in-memory fake core and on the
/// real service over HTTP and Postgres.
@Suite struct DialectStateInMemory {
    static func purchase(_ id: String) -> VerifiedPurchase {
        var purchase = VerifiedPurchase(store: .appStore, environment: .sandbox, transactionID: id)
        purchase.originalTransactionID = id
        purchase.productID = "stamps.10"
        return purchase
    }

    static func redeem(
        _ core: FakeCore, evidence: String, nickname: String, from address: String = "192.0.2.1"
    ) async throws -> RouteResponse {
        let body = try JSONSerialization.data(withJSONObject: [
            "bundle_id": "com.example.game", "evidence": evidence, "nickname": nickname,
        ])
        return await core.call(StampCardDialect(), "POST", "/test/stamp-cards", body: body, callerAddress: address)
    }

    @Test func accountsLinksAndTokensGoThroughTheCoresProtocols() async throws {
        let core = FakeCore()
        core.clients = [
            ClientInfo(
                clientID: "rgc_test", gameID: 5,
                appIdentifiers: [AppStoreProvider.bundleIDKind.name: ["com.example.game"]], environments: [.sandbox])
        ]
        core.add(evidence: "good", proves: Self.purchase("1001"))

        let first = try await Self.redeem(core, evidence: "good", nickname: "ada")
        #expect(first.status == 200)
        let token = try #require(first.object["token"] as? String)
        let accountID = try #require(first.object["account_id"] as? String)
        // Only a digest of the token is kept.
        #expect(!core.memoryTokens.storedDigests.contains(token))

        let card = await core.call(
            StampCardDialect(), "GET", "/test/stamp-cards/me", headers: ["authorization": "Bearer \(token)"])
        #expect(card.status == 200)
        #expect(
            try JSONDecoder().decode(StampCardDialect.CardView.self, from: card.body)
                == .init(nickname: "ada", purchases: ["1001"]))

        // The same purchase again keeps its account: the link made first wins.
        let again = try await Self.redeem(core, evidence: "good", nickname: "eve", from: "192.0.2.2")
        #expect(again.object["account_id"] as? String == accountID)
        let unauthorized = await core.call(
            StampCardDialect(), "GET", "/test/stamp-cards/me", headers: ["authorization": "Bearer nope"])
        #expect(unauthorized.status == 401)
    }

    @Test func aForgedPurchaseCreatesNothingAndTheLimitAnswers429() async throws {
        let core = FakeCore()
        core.clients = [
            ClientInfo(
                clientID: "rgc_test", gameID: nil,
                appIdentifiers: [AppStoreProvider.bundleIDKind.name: ["com.example.game"]], environments: [.sandbox])
        ]
        core.add(
            evidence: "forged",
            refusedWith: StoreVerificationError(code: .verificationFailed, reason: "FORGED", message: "bad signature"))
        let refused = try await Self.redeem(core, evidence: "forged", nickname: "mallory")
        #expect(refused.status == 422)
        #expect(core.memoryTokens.storedDigests.isEmpty)
        #expect(try await core.accounts.account(username: "mallory", scope: "client:rgc_test") == nil)
        _ = try await Self.redeem(core, evidence: "forged", nickname: "mallory")
        _ = try await Self.redeem(core, evidence: "forged", nickname: "mallory")
        let limited = try await Self.redeem(core, evidence: "forged", nickname: "mallory")
        #expect(limited.status == 429)
        #expect(limited.header("Retry-After") != nil)
    }
}

@Suite struct DialectStateInPostgres {
    static func redeem(
        port: Int, evidence: String, nickname: String, forwardedFor: String? = nil
    ) async throws -> RawHTTP.Response {
        let body = try JSONSerialization.data(withJSONObject: [
            "bundle_id": "com.example.game", "evidence": evidence, "nickname": nickname,
        ])
        var headers = ["Content-Type": "application/json"]
        if let forwardedFor { headers["X-Forwarded-For"] = forwardedFor }
        return try await RawHTTP.request(
            port: port, method: "POST", path: "/test/stamp-cards", headers: headers, body: body)
    }

    /// A second process on the same database: another service instance with its own pool.
    static func secondService(
        beside harness: VerifyHarness, trustedProxies: [TrustedProxy] = []
    ) async throws -> Service {
        var configuration = harness.service.configuration
        configuration.port = 0
        configuration.trustedProxies = trustedProxies
        let logger = Logger(minimumLevel: .error)
        let provider = AppStoreProvider(verifier: AppStoreSignedDataVerifier(trustRoots: [harness.pki.root]))
        let service = try Service(
            configuration: configuration, logger: logger, database: try Database.open(configuration, logger: logger),
            stores: [provider.registration], dialects: [StampCardDialect()])
        try await service.start()
        return service
    }

    @Test func stateIsSharedByProcessesAndTokensDieWithTheSecret() async throws {
        let harness = try await VerifyHarness.start(dialects: [StampCardDialect()])
        defer { harness.stop() }
        let other = try await Self.secondService(beside: harness)
        defer { Task.detached { await other.shutdown() } }
        let evidence = try harness.pki.sign(
            AppleTestPKI.transaction(["transactionId": "2000000000077001", "originalTransactionId": "2000000000077001"])
        )

        let first = try await Self.redeem(port: harness.client.port, evidence: evidence, nickname: "ada")
        #expect(first.status == 200, "\(first.text)")
        let token = try #require(try first.json()["token"] as? String)
        // Issued by one process, honoured by the other.
        let card = try await RawHTTP.request(
            port: other.port, path: "/test/stamp-cards/me", headers: ["Authorization": "Bearer \(token)"])
        #expect(card.status == 200)
        #expect(
            try JSONDecoder().decode(StampCardDialect.CardView.self, from: card.body)
                == .init(nickname: "ada", purchases: ["2000000000077001"]))
        // The purchase stays with its first account when redeemed again through the other process.
        let again = try await Self.redeem(port: other.port, evidence: evidence, nickname: "eve")
        #expect(try again.json()["account_id"] as? String == (try first.json()["account_id"] as? String))
        let stored = try await harness.pool.query(
            "SELECT count(*) AS n FROM tokens WHERE token_sha256 = \(TokenRepository.digest(token))")
        #expect(try stored[0].decode("n", as: Int.self) == 1, "kept as its SHA-256")

        // Rotating the client's secret revokes its tokens everywhere.
        _ = try await harness.service.clients.rotateSecret(harness.client.clientID)
        let revoked = try await RawHTTP.request(
            port: other.port, path: "/test/stamp-cards/me", headers: ["Authorization": "Bearer \(token)"])
        #expect(revoked.status == 401)
        #expect(revoked.headers["www-authenticate"] == #"Bearer error="invalid_token""#)
        await other.shutdown()
    }

    /// The stamp card's own limit (3 a day per address) in a window whose edges are far from now.
    static let awayFromTheWindowsEdges = [
        StampCardDialect.perAddress.name: ServiceConfiguration.RateLimitOverride(
            limit: StampCardDialect.perAddress.limit, window: VerifyHarness.rateLimitWindow)
    ]

    @Test func aSharedLimitHoldsAcrossTwoProcessesWithRetryAfter() async throws {
        let harness = try await VerifyHarness.start(
            dialects: [StampCardDialect()], rateLimits: Self.awayFromTheWindowsEdges)
        defer { harness.stop() }
        let other = try await Self.secondService(beside: harness)
        defer { Task.detached { await other.shutdown() } }
        // Unsigned junk: refused by the store, but counted first, per caller address.
        let ports = [harness.client.port, other.port, harness.client.port]
        for port in ports {
            #expect(try await Self.redeem(port: port, evidence: "not-a-receipt", nickname: "x").status == 422)
        }
        let limited = try await Self.redeem(port: other.port, evidence: "not-a-receipt", nickname: "x")
        #expect(limited.status == 429)
        let retryAfter = try #require(limited.headers["retry-after"].flatMap(Int.init))
        #expect(VerifyHarness.isTheWindowsEnd(retryAfter), "\(retryAfter)")
        #expect(try limited.json()["refused"] as? String == "RATE_LIMITED")
        await other.shutdown()
    }

    @Test func forwardedForCountsOnlyFromATrustedProxy() async throws {
        let harness = try await VerifyHarness.start(
            dialects: [StampCardDialect()], rateLimits: Self.awayFromTheWindowsEdges)
        defer { harness.stop() }
        let proxied = try await Self.secondService(
            beside: harness, trustedProxies: [try #require(TrustedProxy("127.0.0.1"))])
        defer { Task.detached { await proxied.shutdown() } }
        // Behind a trusted proxy, each forwarded address has its own budget.
        for address in ["198.51.100.1", "198.51.100.2", "198.51.100.3", "198.51.100.4"] {
            #expect(
                try await Self.redeem(port: proxied.port, evidence: "junk", nickname: "x", forwardedFor: address).status
                    == 422)
        }
        // Not trusted: X-Forwarded-For is the caller's to write and changes nothing.
        for address in ["198.51.100.5", "198.51.100.6", "198.51.100.7"] {
            _ = try await Self.redeem(port: harness.client.port, evidence: "junk", nickname: "x", forwardedFor: address)
        }
        #expect(
            try await Self.redeem(
                port: harness.client.port, evidence: "junk", nickname: "x", forwardedFor: "198.51.100.8"
            ).status == 429)
        await proxied.shutdown()
    }
}
