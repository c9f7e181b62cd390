import AppStore
import AppStoreTestSupport
import Foundation
import Postgres
import TestSupport
import Testing

/// `receiptgate reconcile`, run by an operator as the binary: it reads the store's record from
/// `--since`, applies what no push delivered, records the run as by hand, and refuses bad input
/// with a usage error.
@Suite struct ReconcileCommand {
    @Test func aRunByHandFromSinceFindsWhatTheScheduleWouldNot() async throws {
        let fake = try FakeAppStoreServerAPI()
        let folder = TestDatabase.temporaryDirectory("reconcile-cli")
        let root = folder.appendingPathComponent("root.der"), key = folder.appendingPathComponent("key.p8")
        try fake.pki.root.derEncoded.write(to: root)
        try Data(try fake.teamKey.pemRepresentation().utf8).write(to: key)
        var environment = try await Binary.databaseEnvironment()
        environment["RECEIPTGATE_APPLE_ROOT_CERTS"] = root.path
        environment["RECEIPTGATE_APPSTORE_API_KEY_ID"] = FakeAppStoreServerAPI.keyID
        environment["RECEIPTGATE_APPSTORE_API_ISSUER_ID"] = FakeAppStoreServerAPI.issuerID
        environment["RECEIPTGATE_APPSTORE_API_KEY_PATH"] = key.path
        environment["RECEIPTGATE_APPSTORE_API_PRODUCTION_URL"] = "http://127.0.0.1:\(fake.production.port)"
        environment["RECEIPTGATE_APPSTORE_API_SANDBOX_URL"] = "http://127.0.0.1:\(fake.sandbox.port)"
        let created = try await Binary.run(
            [
                "client", "create", "--name", "g", "--bundle-id", FakeAppStoreServerAPI.bundleID,
                "--environments", "sandbox",
            ], environment)
        #expect(created.status == 0, "\(created.stderr)")

        // A refund five days ago whose push never came: older than a first scheduled run reads.
        let now = Int64(Date().timeIntervalSince1970 * 1000), fiveDays: Int64 = 5 * 86_400_000
        let id = "2000000000009501"
        try NotificationHistoryReconciliation.addToHistory(
            fake, type: "REFUND",
            transaction: [
                "transactionId": id, "originalTransactionId": id, "environment": "Sandbox",
                "revocationDate": now - fiveDays, "revocationReason": 0,
            ], signedDate: now - fiveDays)

        let recent = try await Binary.run(["reconcile", "--store", "app_store"], environment)
        #expect(recent.status == 0, "\(recent.stderr)")
        #expect(try Self.run(recent.stdout, "app_store.notification_history")?["found"] as? Int == 0)

        let since = ISO8601DateFormatter().string(from: Date().addingTimeInterval(-7 * 86_400))
        let caught = try await Binary.run(["reconcile", "--store", "app_store", "--since", since], environment)
        #expect(caught.status == 0, "\(caught.stderr)")
        let history = try #require(try Self.run(caught.stdout, "app_store.notification_history"), "\(caught.stdout)")
        #expect(
            history["found"] as? Int == 1 && history["new"] as? Int == 1 && history["changed"] as? Int == 1
                && history["by_hand"] as? Bool == true,
            "\(history)")
        #expect((history["pages"] as? Int ?? 0) >= 1)
        #expect(try Self.run(caught.stdout, "app_store.quiet_subscriptions") != nil, "the quiet read-back runs too")
        #expect(
            fake.state.historyQueries.get().last { $0.paginationToken == nil }.map {
                $0.startDate <= now - 7 * 86_400_000 + 60_000
            } == true)

        let pool = PostgresPool(.init(connectionString: try #require(environment["DATABASE_URL"]), size: 1))
        defer { pool.shutdown() }
        let state = try await pool.query("SELECT state FROM transactions WHERE transaction_id = \(id)").first?.decode(
            "state", as: String.self)
        #expect(state == "refunded")
        let byHand = try await pool.query("SELECT count(*)::int AS n FROM store_poll_runs WHERE by_hand").first?.decode(
            "n", as: Int.self)
        #expect(byHand == 4, "two runs of two polls")
        await fake.shutdown()
    }

    @Test func badArgumentsAreUsageErrors() async throws {
        let cases: [([String], String)] = [
            (["reconcile"], "--store is required"),
            (["reconcile", "--store", "app_store", "--since", "last week"], "ISO 8601"),
            (["reconcile", "--store", "app_store", "--since", "2999-01-01T00:00:00Z"], "in the future"),
            (["reconcile", "--store", "blockbuster"], "unknown store"),
        ]
        for (arguments, message) in cases {
            let result = try await Binary.run(arguments)
            #expect(
                result.status == 2 && result.stderr.contains(message), "\(arguments): \(result.status) \(result.stderr)"
            )
        }
    }

    static func run(_ stdout: String, _ poll: String) throws -> [String: Any]? {
        (try Binary.json(stdout)["runs"] as? [[String: Any]])?.first { $0["poll"] as? String == poll }
    }
}
