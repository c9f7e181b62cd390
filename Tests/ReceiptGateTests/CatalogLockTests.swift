import AppStoreTestSupport
import Foundation
import Postgres
import ReceiptCore
import Synchronization
import TestSupport
import Testing

@testable import ReceiptGate

/// A catalog change and the claims of its game wait for each other only as long as the other's
/// transaction runs: never for good (a deadlock answered 500), and never for a stream of claims
/// that keeps coming (a change starved until it times out).
@Suite struct CatalogLocks {
    private final class Stop: Sendable { let raised = Mutex(false) }

    static func outcome<T>(_ body: () async throws -> T) async -> Result<T, any Error> {
        do { return .success(try await body()) } catch { return .failure(error) }
    }

    /// Sessions waiting for a lock on the test's database.
    static let waitingSessions = "pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"

    /// Two clients of one game; the claim is made through one of them, `b`, for a product only the
    /// catalog of the other, `a`, maps, so the claim writes `a`'s index rows; meanwhile `a`'s
    /// catalog changes. `a` has the lower id, the order in which client rows were once locked.
    @Test func aClaimWritingASiblingsIndexAndAChangeOfThatSiblingsCatalogBothGoThrough() async throws {
        let h = try await EntitlementHarness.start(gameID: 42)
        defer { h.stop() }
        let created = try await h.harness.service.clients.create(
            VerifyHarness.settings(name: "Sibling", environments: [.production, .sandbox], gameID: 42))
        let sibling = SignedClient(
            port: h.harness.service.port, clientID: created.client.clientID, secret: created.secret)
        let (a, b) = h.client.clientID < sibling.clientID ? (h.client, sibling) : (sibling, h.client)
        let catalog = h.harness.service.repositories.catalog
        _ = try await catalog.set(
            client: a.clientID, store: "app_store", product: "noads", entitlements: ["no_ads"], by: "test")

        // The claim is held inside its transaction, after it checked its client, by a trigger
        // waiting on a lock the test holds.
        let parked = try await ParkedClaims.start(h, key: 4243)
        let (gate, gateLocks) = (parked.gate, parked.gateLocks)

        let receipt = try h.harness.pki.sign(AppleTestPKI.transaction(CatalogRefresh.purchase("2000000000990001")))
        let claim = Task {
            try await b.post("/v1/verify", json: ["store": "app_store", "receipt": receipt, "player_id": "both"])
        }
        try await WebhookDelivery.waitUntil { try await h.harness.count("\(gateLocks) AND NOT granted") == 1 }

        let clientA = a.clientID
        let change = Task {
            try await catalog.set(
                client: clientA, store: "app_store", product: "noads", entitlements: ["no_ads", "supporter"], by: "test"
            )
        }
        // The change waits for the claim in flight of its game.
        try await WebhookDelivery.waitUntil { try await h.harness.count(Self.waitingSessions) >= 2 }
        try await gate.release()

        let answer = try await claim.value
        #expect(answer.status == 200, "\(answer.text)")
        if case .failure(let error) = await Self.outcome({ try await change.value }) {
            Issue.record("the change failed: \(error)")
        }
        #expect(
            Set(try await h.owned("both", as: a).byName.keys) == ["no_ads", "supporter"],
            "the claim and then the change reached a's index")
        try await h.harness.pool.execute("DROP TRIGGER test_hold_claims ON transactions")
    }

    /// Claims of the game keep coming, each holding its transaction open a while, so one is always
    /// in flight; a catalog change waits only for those in flight when it asked.
    @Test func aChangeIsNotStarvedByAStreamOfClaimsOfItsGame() async throws {
        let h = try await EntitlementHarness.start(gameID: 42)
        defer { h.stop() }
        try await h.harness.pool.execute(
            """
            CREATE FUNCTION test_slow_claims() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(0.3); RETURN NEW; END $$
            """)
        try await h.harness.pool.execute(
            "CREATE TRIGGER test_slow_claims BEFORE INSERT ON transactions FOR EACH ROW EXECUTE FUNCTION test_slow_claims()"
        )
        let stop = Stop()
        let (client, pki) = (h.client, h.harness.pki)
        let claimers = (0..<6).map { stream in
            Task { () throws -> [Int] in
                var statuses: [Int] = []
                while !stop.raised.withLock({ $0 }) {
                    let id = "20000000009\(stream)\(String(format: "%05d", statuses.count))"
                    let receipt = try pki.sign(AppleTestPKI.transaction(CatalogRefresh.purchase(id)))
                    statuses.append(
                        try await client.post(
                            "/v1/verify", json: ["store": "app_store", "receipt": receipt, "player_id": "p\(stream)"]
                        ).status)
                }
                return statuses
            }
        }
        // Claims are flowing, several at once.
        try await WebhookDelivery.waitUntil { try await h.harness.count("transactions") >= 8 }

        let catalog = h.harness.service.repositories.catalog, clientID = h.client.clientID
        let changed = await Self.outcome {
            try await catalog.set(
                client: clientID, store: "app_store", product: "noads", entitlements: ["no_ads"], by: "test")
        }
        stop.raised.withLock { $0 = true }
        var statuses: [Int] = []
        for claimer in claimers { statuses += try await claimer.value }

        // A change starved by the stream of claims fails here: its lock wait gives up after 5 s.
        if case .failure(let error) = changed { Issue.record("the change failed: \(error)") }
        #expect(statuses.allSatisfy { $0 == 200 }, "\(statuses.filter { $0 != 200 })")
        #expect(
            try await h.owned("p0").byName["no_ads"] != nil,
            "claims before the change were refreshed by it, later ones under it")
        try await h.harness.pool.execute("DROP TRIGGER test_slow_claims ON transactions")
    }

    /// A change that cannot get its game within its lock timeout (a claim stuck in flight) gives
    /// up: the admin API answers 503 with Retry-After, safe to retry, and nothing changed.
    @Test func aChangeThatWaitedTooLongIsAnsweredSafeToRetry() async throws {
        let h = try await EntitlementHarness.start(gameID: 42)
        defer { h.stop() }
        let scopeLocks =
            "pg_locks WHERE locktype = 'advisory' AND classid = \(CatalogScopeLock.lockClass) AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
        let stuck = HeldSession(
            pool: h.harness.pool,
            ["SELECT pg_advisory_lock_shared(\(CatalogScopeLock.lockClass), hashtext('game:42'))"],
            finally: "SELECT pg_advisory_unlock_all()")
        try await WebhookDelivery.waitUntil { try await h.harness.count("\(scopeLocks) AND granted") == 1 }
        let answer = try await RawHTTP.request(
            port: h.harness.service.port, method: "PUT",
            path: "/admin/clients/\(h.client.clientID)/products/app_store/noads",
            headers: ["Authorization": "Bearer \(EntitlementHarness.adminToken)", "Content-Type": "application/json"],
            body: Data(#"{"entitlements":["no_ads"]}"#.utf8))
        #expect(answer.status == 503, "\(answer.text)")
        #expect(answer.headers["retry-after"] != nil)
        #expect(try await h.harness.service.repositories.catalog.list(client: h.client.clientID).isEmpty)
        try await stuck.release()
    }
}
