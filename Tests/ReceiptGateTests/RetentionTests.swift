import Foundation
import Postgres
import TestSupport
import Testing

@testable import ReceiptGate

/// What is kept only for a while goes after its days, measured on an injected clock; the ledger,
/// anything unsent, delivery records and store account tokens stay whatever their age.
@Suite struct RetentionSweeps {
    static let now = Date(timeIntervalSince1970: 1_830_000_000)

    static func daysAgo(_ days: Double) -> Date { now.addingTimeInterval(-days * 86_400) }

    @Test func aChainNoKeptBodyNamesGoesOnceUnusedLongerThanBodiesAreKept() async throws {
        let harness = try await VerifyHarness.start()
        defer { harness.stop() }
        let pool = harness.pool
        // Two old chains, one a kept body still names; one chain used yesterday.
        let named = Data(repeating: 1, count: 32), unnamed = Data(repeating: 2, count: 32)
        let recent = Data(repeating: 3, count: 32)
        for (digest, age) in [(named, 100.0), (unnamed, 100), (recent, 1)] {
            try await pool.execute(
                """
                INSERT INTO raw_body_pieces (digest, piece, first_seen_at, last_used_at)
                VALUES (\(digest), 'eyJ'::bytea, \(Self.daysAgo(age)), \(Self.daysAgo(age)))
                """)
        }
        let parts = #"["{\"signedPayload\":\"",{"piece":"\#(String(repeating: "01", count: 32))"},".e30.c2ln\"}"]"#
        try await pool.execute(
            """
            INSERT INTO store_notifications (store, notification_id, notification_type, raw_body, raw_format, decoded, received_at)
            VALUES ('app_store', 'unprocessed', 'TEST', \(Data(parts.utf8)), 1, '{}'::jsonb, \(Self.daysAgo(100)))
            """)
        let retention = Retention(
            pool: pool, settings: .init(attemptsDays: 90, outboxDays: 30, notificationsDays: 90), batchSize: 100)
        #expect(try await retention.sweep(now: Self.now).bodyPieces == 1)
        let left = try await pool.query("SELECT digest FROM raw_body_pieces ORDER BY digest")
        #expect(try left.map { try $0.decode("digest", as: Data.self) } == [named, recent])
    }

    @Test func eachKindGoesAfterItsOwnDaysAndNothingElseDoes() async throws {
        let harness = try await VerifyHarness.start()
        defer { harness.stop() }
        let pool = harness.pool, client = harness.client.clientID
        for (index, age) in [100.0, 95, 89, 10].enumerated() {
            try await pool.execute(
                """
                INSERT INTO verification_attempts (client_id, store, request_id, outcome, created_at)
                VALUES (\(client), 'app_store', \("attempt-\(index)"), 'failed', \(Self.daysAgo(age)))
                """)
        }
        // Outbox: old and sent, a webhook and a refund callback (go); old and pending, old and given
        // up on (stay: unsent); an old delivery's record and account token (stay); recent (stays).
        let outbox: [(status: String, target: String, age: Double)] = [
            ("delivered", "webhook", 40), ("delivered", "refund_callback", 35), ("pending", "webhook", 50),
            ("dead", "webhook", 45), ("delivered", "delivery", 60),
            ("delivered", "store_account_token", 60), ("delivered", "webhook", 5),
        ]
        // Each with its body kept apart, as a message written claimed keeps it.
        for (index, row) in outbox.enumerated() {
            try await pool.execute(
                """
                WITH message AS (
                    INSERT INTO outbox (event_id, client_id, event_type, aggregate_key, target, status, created_at, is_head)
                    VALUES (gen_random_uuid(), \(client), 'test', \("k\(index)"), \(row.target), \(row.status), \(Self.daysAgo(row.age)),
                            \(row.status == "pending"))
                    RETURNING id)
                INSERT INTO outbox_bodies (id, body) SELECT id, \("{\"k\":\(index)}") FROM message
                """)
        }
        for (index, row) in [(age: 120.0, processed: true), (age: 120, processed: false), (age: 30, processed: true)]
            .enumerated()
        {
            try await pool.execute(
                """
                INSERT INTO store_notifications (store, notification_id, notification_type, raw_body, decoded, received_at, processed_at)
                VALUES ('app_store', \("n\(index)"), 'TEST', '\\x0102030405'::bytea, '{"kept": true}'::jsonb, \(Self.daysAgo(row.age)),
                        \(row.processed ? Self.daysAgo(row.age) : nil))
                """)
        }
        let retention = Retention(
            pool: pool, settings: .init(attemptsDays: 90, outboxDays: 30, notificationsDays: 90), batchSize: 2)
        let removed = try await retention.sweep(now: Self.now)
        #expect(removed == Retention.Removed(attempts: 2, outboxMessages: 2, notificationBodies: 1), "\(removed)")

        let attempts = try await pool.query(
            "SELECT request_id FROM verification_attempts WHERE request_id LIKE 'attempt-%' ORDER BY request_id")
        #expect(try attempts.map { try $0.decode("request_id", as: String.self) } == ["attempt-2", "attempt-3"])
        let kept = try await pool.query(
            "SELECT aggregate_key FROM outbox WHERE event_type = 'test' ORDER BY aggregate_key")
        #expect(try kept.map { try $0.decode("aggregate_key", as: String.self) } == ["k2", "k3", "k4", "k5", "k6"])
        let bodies = try await pool.query(
            "SELECT b.body, EXISTS (SELECT 1 FROM outbox o WHERE o.id = b.id) AS owned FROM outbox_bodies b ORDER BY b.body"
        )
        #expect(
            try bodies.map { try $0.decode("body", as: String.self) }
                == ["{\"k\":2}", "{\"k\":3}", "{\"k\":4}", "{\"k\":5}", "{\"k\":6}"],
            "a removed message's body goes with it")
        #expect(try bodies.allSatisfy { try $0.decode("owned", as: Bool.self) })
        let notifications = try await pool.query(
            """
            SELECT notification_id, length(raw_body) AS body, decoded::text AS decoded, body_removed_at IS NOT NULL AS removed
            FROM store_notifications WHERE notification_type = 'TEST' ORDER BY notification_id
            """)
        #expect(
            try notifications.map { try $0.decode("body", as: Int.self) } == [0, 5, 5],
            "only a processed, old body goes")
        #expect(try notifications.map { try $0.decode("removed", as: Bool.self) } == [true, false, false])
        #expect(
            try notifications.allSatisfy { try $0.decode("decoded", as: String.self).contains("kept") },
            "the row stays: it still deduplicates")

        // The same clock again: nothing more; a day later, what has aged since goes.
        #expect(try await retention.sweep(now: Self.now) == Retention.Removed())
        let later = try await retention.sweep(now: Self.now.addingTimeInterval(2 * 86_400))
        #expect(later.attempts == 1, "the 89-day-old attempt is 91 days old now: \(later)")
    }

    @Test func zeroDaysKeepsEverything() async throws {
        // The service's own upkeep keeps everything too: its sweep may run during the test.
        let harness = try await VerifyHarness.start(configure: {
            $0.retainAttemptsDays = 0
            $0.retainOutboxDays = 0
            $0.retainNotificationsDays = 0
        })
        defer { harness.stop() }
        try await harness.pool.execute(
            """
            INSERT INTO verification_attempts (client_id, store, request_id, outcome, created_at)
            VALUES (\(harness.client.clientID), 'app_store', 'ancient', 'failed', \(Self.daysAgo(3650)))
            """)
        let retention = Retention(
            pool: harness.pool, settings: .init(attemptsDays: 0, outboxDays: 0, notificationsDays: 0))
        #expect(try await retention.sweep(now: Self.now) == Retention.Removed())
        #expect(try await harness.count("verification_attempts WHERE request_id = 'ancient'") == 1)
    }

    @Test func theSettingsAreReadFromTheEnvironment() throws {
        let configuration = try ServiceConfiguration.fromEnvironment([
            "RECEIPTGATE_RETAIN_ATTEMPTS_DAYS": "7", "RECEIPTGATE_RETAIN_OUTBOX_DAYS": "0",
            "RECEIPTGATE_RETAIN_NOTIFICATIONS_DAYS": "365",
        ])
        #expect(
            configuration.retainAttemptsDays == 7 && configuration.retainOutboxDays == 0
                && configuration.retainNotificationsDays == 365)
        #expect(ServiceConfiguration().retainAttemptsDays == 90 && ServiceConfiguration().retainOutboxDays == 30)
        #expect(throws: ServiceConfiguration.Invalid.self) {
            try ServiceConfiguration.fromEnvironment(["RECEIPTGATE_RETAIN_OUTBOX_DAYS": "-1"])
        }
    }
}
