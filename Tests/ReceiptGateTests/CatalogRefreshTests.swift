import AppStoreTestSupport
import Foundation
import Postgres
import ReceiptCore
import Synchronization
import TestSupport
import Testing

@testable import ReceiptGate

/// A session of its own on the test's database: runs `statements`, then stays open (holding
/// whatever they took: a transaction, an advisory lock) until `release()`, then runs `finally`.
final class HeldSession: Sendable {
    private final class Flag: Sendable { let raised = Mutex(false) }
    private let released = Flag()
    private let done: Task<Void, any Error>

    init(pool: PostgresPool, _ statements: [String], finally: String) {
        let released = released
        done = Task {
            try await pool.withConnection { connection in
                for statement in statements { try connection.execute("\(unescaped: statement)") }
                // A pool thread of the test's own; the flag is the condition, polled.
                while !released.raised.withLock({ $0 }) { usleep(2_000) }
                try connection.execute("\(unescaped: finally)")
            }
        }
    }

    func release() async throws {
        released.raised.withLock { $0 = true }
        try await done.value
    }
}

/// What a catalog change owes the index reaches it whatever cuts the change's caller short, and a
/// change neither waits for unrelated transactions nor misses a claim in flight.
@Suite struct CatalogRefresh {
    static let noads: [String: any Sendable] = ["productId": "noads", "type": "Non-Consumable"]

    static func purchase(_ id: String) -> [String: any Sendable] {
        noads.merging(["transactionId": id, "originalTransactionId": id]) { _, new in new }
    }

    @Test func aChangeWhoseRefreshWasCutOffIsFinishedByTheWorker() async throws {
        let h = try await EntitlementHarness.start(configure: { $0.catalogRefreshSeconds = 1 })
        defer { h.stop() }
        try await h.claimApple(Self.purchase("2000000000980001"), for: "cut-short")
        try await h.claimApple(Self.purchase("2000000000980002"), for: "caller-gone")
        let catalog = h.harness.service.repositories.catalog

        // The caller's refresh stopped at its budget (a deadline) before it began.
        _ = try await catalog.set(
            client: h.client.clientID, store: "app_store", product: "noads", entitlements: ["no_ads"], by: "test",
            refreshWithin: .zero)
        try await WebhookDelivery.waitUntil { try await h.owned("cut-short").byName["no_ads"] != nil }
        try await WebhookDelivery.waitUntil { try await h.harness.count("catalog_refreshes") == 0 }

        // The change committed and its caller died before refreshing (an interrupted command, a
        // crash): what it wrote in its transaction, and its lease gone by.
        try await h.harness.pool.withTransaction { connection in
            try connection.execute(
                """
                INSERT INTO product_entitlements (client_id, store, product_id, entitlement) VALUES (\(h.client.clientID), 'app_store', 'noads', 'supporter')
                """)
            _ = try CatalogRefreshes.request(
                client: h.client.clientID, store: "app_store", product: "noads", on: connection)
        }
        // Not yet refreshed while the caller's lease runs; then the lease gone by, for the worker.
        #expect(try await h.owned("caller-gone").byName["supporter"] == nil)
        try await h.harness.pool.execute("UPDATE catalog_refreshes SET not_before = clock_timestamp()")
        try await WebhookDelivery.waitUntil { try await h.owned("caller-gone").byName["supporter"] != nil }
        #expect(Set(try await h.owned("cut-short").byName.keys) == ["no_ads", "supporter"])
        try await WebhookDelivery.waitUntil { try await h.harness.count("catalog_refreshes") == 0 }
    }

    @Test func anAdminChangeAnswersQuicklyWhileAnotherSessionHoldsALongTransaction() async throws {
        let h = try await EntitlementHarness.start()
        defer { h.stop() }
        try await h.claimApple(Self.purchase("2000000000980101"), for: "patient")
        // A report, a migration, an operator's psql: a transaction left open, unrelated to the catalog.
        let idle = HeldSession(pool: h.harness.pool, ["BEGIN", "SELECT txid_current()"], finally: "ROLLBACK")
        try await WebhookDelivery.waitUntil {
            try await h.harness.count(
                "pg_stat_activity WHERE datname = current_database() AND state = 'idle in transaction' AND query = 'SELECT txid_current()'"
            ) == 1
        }
        // Answered while that transaction is still open: a change that waited for it would wait
        // until the request's deadline and answer 503.
        let answer = try await RawHTTP.request(
            port: h.harness.service.port, method: "PUT",
            path: "/admin/clients/\(h.client.clientID)/products/app_store/noads",
            headers: ["Authorization": "Bearer \(EntitlementHarness.adminToken)", "Content-Type": "application/json"],
            body: Data(#"{"entitlements":["no_ads"]}"#.utf8))
        #expect(answer.status == 200, "\(answer.text)")
        #expect(try await h.owned("patient").byName["no_ads"] != nil, "refreshed before the answer")
        try await idle.release()
    }

    /// A claim that checked its client before the change and commits after it: the change waits
    /// for it (the client's row), so the refresh that follows sees the claim. Held inside the
    /// claim's transaction, right after its version check, by a trigger waiting on a lock the
    /// test holds. Through the ordinary path (a client with a webhook) and the group-commit batch.
    @Test(arguments: [true, false]) func aClaimInFlightAcrossTheChangeIsNotMissed(ordinaryPath: Bool) async throws {
        let h = try await EntitlementHarness.start()
        defer { h.stop() }
        var quiet = VerifyHarness.settings(name: "Quiet build", environments: [.production, .sandbox], gameID: 42)
        quiet.webhookURL = nil
        let created = try await h.harness.service.clients.create(quiet)
        let claimer =
            ordinaryPath
            ? h.client
            : SignedClient(port: h.harness.service.port, clientID: created.client.clientID, secret: created.secret)
        let batched = try await GroupCommitCounts.read(port: h.harness.service.port)
        let parked = try await ParkedClaims.start(h, key: 4242)
        let (gate, gateLocks) = (parked.gate, parked.gateLocks)

        let receipt = try h.harness.pki.sign(
            AppleTestPKI.transaction(Self.purchase(ordinaryPath ? "2000000000980201" : "2000000000980202")))
        let claim = Task {
            try await claimer.post(
                "/v1/verify", json: ["store": "app_store", "receipt": receipt, "player_id": "racer"])
        }
        try await WebhookDelivery.waitUntil { try await h.harness.count("\(gateLocks) AND NOT granted") == 1 }

        let catalog = h.harness.service.repositories.catalog, clientID = h.client.clientID
        let change = Task {
            try await catalog.set(
                client: clientID, store: "app_store", product: "noads", entitlements: ["no_ads"], by: "test")
        }
        // The change is waiting for the claim (beside the claim waiting for the gate), or (were it not to) has committed.
        try await WebhookDelivery.waitUntil {
            let waiting = try await h.harness.count(
                "pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")
            let mapped = try await h.harness.count("product_entitlements")
            return waiting >= 2 || mapped > 0
        }
        try await gate.release()
        let answer = try await claim.value
        #expect(answer.status == 200, "\(answer.text)")
        _ = try await change.value
        #expect(try await h.owned("racer").byName["no_ads"] != nil, "the refresh after the change saw the claim")
        try await h.harness.pool.execute("DROP TRIGGER test_hold_claims ON transactions")
        if !ordinaryPath {
            #expect(
                try await GroupCommitCounts.read(port: h.harness.service.port).settled == batched.settled + 1,
                "answered by the batch")
        }
    }

    @Test func aClientLeavingItsGameTakesAwayWhatItsPurchasesGrantedUnderTheOtherCatalogs() async throws {
        let h = try await EntitlementHarness.start(gameID: 42)
        defer { h.stop() }
        let sibling = try await h.harness.service.clients.create(
            VerifyHarness.settings(name: "Same game", environments: [.production, .sandbox], gameID: 42))
        let siblingClient = SignedClient(
            port: h.harness.service.port, clientID: sibling.client.clientID, secret: sibling.secret)
        let catalog = h.harness.service.repositories.catalog
        _ = try await catalog.set(
            client: h.client.clientID, store: "app_store", product: "noads", entitlements: ["no_ads"], by: "test")
        _ = try await catalog.set(
            client: sibling.client.clientID, store: "app_store", product: "noads", entitlements: ["ad_free"], by: "test"
        )
        try await h.claimApple(Self.purchase("2000000000980301"), for: "mover")
        #expect(try await h.owned("mover", as: siblingClient).byName["ad_free"] != nil)

        var moved = ClientSettings()
        moved.gameID = 77
        _ = try await h.harness.service.clients.update(h.client.clientID, moved)
        // The update refreshes within its time budget, the worker finishes what it did not.
        try await WebhookDelivery.waitUntil { try await h.harness.count("catalog_refreshes") == 0 }
        #expect(
            try await h.owned("mover", as: siblingClient).byName.isEmpty,
            "the game it left no longer holds its purchases")
        #expect(try await h.harness.count("player_entitlements WHERE client_id = '\(sibling.client.clientID)'") == 0)
        #expect(try await h.owned("mover").byName["no_ads"] != nil, "its own catalog still sees its purchase")
    }

    @Test func theAuditRowCommitsWithTheChangeOrNeitherDoes() async throws {
        let h = try await EntitlementHarness.start()
        defer { h.stop() }
        let version = {
            try await h.harness.pool.query("SELECT version FROM clients WHERE id = \(h.client.clientID)")[0].decode(
                "version", as: Int64.self)
        }
        let before = try await version()
        try await h.harness.pool.execute(
            "CREATE FUNCTION test_refuse_audit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'audit refused'; END $$"
        )
        try await h.harness.pool.execute(
            "CREATE TRIGGER test_refuse_audit BEFORE INSERT ON console_audit FOR EACH ROW EXECUTE FUNCTION test_refuse_audit()"
        )
        let catalog = h.harness.service.repositories.catalog
        await #expect(throws: (any Error).self) {
            try await catalog.set(
                client: h.client.clientID, store: "app_store", product: "noads", entitlements: ["no_ads"], by: "test")
        }
        #expect(try await catalog.list(client: h.client.clientID).isEmpty, "no change without its audit row")
        #expect(try await h.harness.count("catalog_refreshes") == 0)
        #expect(try await version() == before)
        try await h.harness.pool.execute("DROP TRIGGER test_refuse_audit ON console_audit")

        // The same mapping set again changes nothing: no audit row, no version bump, no refresh.
        _ = try await catalog.set(
            client: h.client.clientID, store: "app_store", product: "noads", entitlements: ["no_ads"], by: "test")
        let (audited, changed) = (try await h.harness.count("console_audit"), try await version())
        let again = try await catalog.set(
            client: h.client.clientID, store: "app_store", product: "noads", entitlements: ["no_ads", "no_ads"],
            by: "test")
        #expect(again.entitlements == ["no_ads"])
        #expect(try await h.harness.count("console_audit") == audited)
        #expect(try await version() == changed, "the game's clients keep their cached copies")
    }

    /// A refresh that began before its product was requested again never deletes the newer
    /// request, even when the row was deleted and written anew in between.
    @Test func aSlowRefreshDoesNotCompleteARequestWrittenAfterIt() async throws {
        let h = try await EntitlementHarness.start()
        defer { h.stop() }
        let queue = CatalogRefreshes(pool: h.harness.pool), clientID = h.client.clientID
        let write = {
            try await h.harness.pool.withTransaction {
                try CatalogRefreshes.request(client: clientID, store: "app_store", product: "noads", on: $0)
            }
        }
        let slow = try await write()
        try await queue.complete(slow)  // another refresher finished it
        let newer = try await write()
        #expect(newer.generation != slow.generation)
        try await queue.complete(slow)  // the slow refresher, late
        #expect(try await queue.pending() == [newer])
        try await queue.complete(newer)
    }
}

/// Claims parked inside their transaction (after they checked their client) by a trigger that waits
/// on an advisory lock a held session owns, until `gate.release()`. `gateLocks` names that lock's
/// rows in `pg_locks` of this database only (other tests' databases share the cluster's lock table).
struct ParkedClaims {
    let gate: HeldSession
    let gateLocks: String

    static func start(_ h: EntitlementHarness, key: Int) async throws -> ParkedClaims {
        try await h.harness.pool.execute(
            """
            CREATE FUNCTION test_hold_claims() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN PERFORM pg_advisory_xact_lock_shared(\(unescaped: String(key))); RETURN NEW; END $$
            """)
        try await h.harness.pool.execute(
            "CREATE TRIGGER test_hold_claims BEFORE INSERT ON transactions FOR EACH ROW EXECUTE FUNCTION test_hold_claims()"
        )
        let gateLocks =
            "pg_locks WHERE locktype = 'advisory' AND objid = \(key) AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
        let gate = HeldSession(
            pool: h.harness.pool, ["SELECT pg_advisory_lock(\(key))"], finally: "SELECT pg_advisory_unlock(\(key))")
        try await WebhookDelivery.waitUntil { try await h.harness.count("\(gateLocks) AND granted") == 1 }
        return ParkedClaims(gate: gate, gateLocks: gateLocks)
    }
}
