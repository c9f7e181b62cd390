import Foundation
import Postgres
import Synchronization

/// What the ledger keeps only for a while: verification attempts, sent outbox messages and the raw
/// bodies of store notifications, each for its configured number of days (0 keeps them for ever).
/// The ledger itself (transactions, subscriptions, refunds, accounts, claims) is never touched.
///
/// Removed in small batches walked in id order from a cursor, each batch its own short
/// statement, so no lock is held long and the work per batch does not depend on the table's size.
/// Kept for ever whatever the setting: a delivery's record (a refund answer asks whether the
/// purchase was delivered), a store account token's (it is sent once per purchase), and anything
/// not sent (pending, or given up on and waiting for an operator to send it again).
final class Retention: Sendable {
    struct Settings: Sendable, Equatable {
        var attemptsDays = 90
        var outboxDays = 30
        var notificationsDays = 90
    }

    struct Removed: Sendable, Equatable {
        var attempts = 0, outboxMessages = 0, notificationBodies = 0, bodyPieces = 0
    }

    let pool: PostgresPool
    let settings: Settings
    let batchSize: Int
    private struct Cursors {
        var positions: [String: Int64] = [:]
        var rewoundAt: Date?
    }

    private let cursors = Mutex(Cursors())

    init(pool: PostgresPool, settings: Settings, batchSize: Int = 2000) {
        self.pool = pool
        self.settings = settings
        self.batchSize = batchSize
    }

    /// One pass over each table up to what is older than its setting at `now`.
    func sweep(now: Date) async throws -> Removed {
        rewindDaily(now)
        var removed = Removed()
        removed.attempts = try await walk("verification_attempts", days: settings.attemptsDays, now: now) { cutoff in
            "DELETE FROM verification_attempts a USING batch b WHERE a.id = b.id AND b.at < \(cutoff) RETURNING 1"
        }
        removed.outboxMessages = try await walk(
            "outbox", days: settings.outboxDays, now: now,
            alongside: "DELETE FROM outbox_bodies x USING changed r WHERE x.id = r.id"
        ) { cutoff in
            """
            DELETE FROM outbox o USING batch b
            WHERE o.id = b.id AND b.at < \(cutoff) AND o.status = 'delivered' AND o.target NOT IN ('delivery', 'store_account_token')
              AND NOT \(unescaped: OutboxRepository.inFlight)
            RETURNING o.id
            """
        }
        removed.notificationBodies = try await walk(
            "store_notifications", days: settings.notificationsDays, now: now, timeColumn: "received_at"
        ) { cutoff in
            """
            UPDATE store_notifications n SET raw_body = ''::bytea, raw_format = 0, body_removed_at = now() FROM batch b
            WHERE n.id = b.id AND b.at < \(cutoff) AND n.processed_at IS NOT NULL AND n.body_removed_at IS NULL RETURNING 1
            """
        }
        removed.bodyPieces = try await removeUnusedPieces(now: now)
        return removed
    }

    /// The pieces of raw bodies (`RawBodyCompaction`) no body used for two days longer than bodies
    /// are kept, and that no kept body names: a certificate chain its store stopped signing with.
    /// A few at a time; normally there are none.
    private func removeUnusedPieces(now: Date) async throws -> Int {
        guard settings.notificationsDays > 0 else { return 0 }
        let cutoff = now.addingTimeInterval(-Double(settings.notificationsDays + 2) * 86_400)
        return try await pool.query(
            """
            DELETE FROM raw_body_pieces p
            WHERE p.digest IN (SELECT digest FROM raw_body_pieces WHERE last_used_at < \(cutoff) LIMIT 20)
              AND NOT EXISTS (
                SELECT 1 FROM store_notifications n
                WHERE n.raw_format = 1 AND position(convert_to(encode(p.digest, 'hex'), 'UTF8') IN n.raw_body) > 0)
            RETURNING 1
            """
        ).count
    }

    /// Batches of `table` in id order from its cursor, each changed by `change` (a statement over
    /// the CTE `batch(id, at)` given the cutoff, returning a row per row it changed), until a batch
    /// reaches rows newer than the cutoff or the table's end. The cursor moves past a batch only
    /// when all of it was older than the cutoff. `alongside`: a statement over `changed` run with
    /// each batch (what other tables keep of the rows removed).
    private func walk(
        _ table: String, days: Int, now: Date, timeColumn: String = "created_at", alongside: PostgresQuery? = nil,
        change: (Date) -> PostgresQuery
    ) async throws -> Int {
        guard days > 0 else { return 0 }
        let cutoff = now.addingTimeInterval(-Double(days) * 86_400)
        let also: PostgresQuery = alongside.map { ", alongside AS (\($0))" } ?? ""
        var total = 0
        while true {
            let after = cursors.withLock { $0.positions[table] ?? 0 }
            let row = try await pool.query(
                """
                WITH batch AS MATERIALIZED (SELECT id, \(unescaped: timeColumn) AS at FROM \(unescaped: table) WHERE id > \(after) ORDER BY id LIMIT \(batchSize)),
                     changed AS (\(change(cutoff)))\(also)
                SELECT (SELECT count(*) FROM changed) AS changed, (SELECT count(*) FROM batch) AS n, (SELECT max(id) FROM batch) AS last,
                       (SELECT bool_or(at >= \(cutoff)) FROM batch) AS newer
                """)[0]
            total += Int(try row.decode("changed", as: Int64.self))
            let last = try row.decode("last", as: Int64?.self)
            let reachedNewer =
                try row.decode("n", as: Int64.self) < Int64(batchSize)
                || (try row.decode("newer", as: Bool?.self) ?? false)
            if reachedNewer || last == nil { return total }
            if let last { cursors.withLock { $0.positions[table] = last } }
        }
    }

    /// Once a day every table is walked from its start again: what was kept then (not yet sent)
    /// may be removable now.
    private func rewindDaily(_ now: Date) {
        cursors.withLock { cursors in
            guard let rewound = cursors.rewoundAt, now.timeIntervalSince(rewound) < 86_400 else {
                cursors = Cursors(positions: [:], rewoundAt: now)
                return
            }
        }
    }
}
