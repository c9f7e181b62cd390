import Foundation
import Postgres
import Testing

enum OutboxDrain {
    /// Waits until no outbox row is pending: each was delivered or given up, so no worker can
    /// claim it again and what a receiver got is all it will get. Tests wait for this instead of
    /// sleeping "to see that nothing else arrives". Not draining within `limit` is a failure.
    static func wait(
        _ pool: PostgresPool, within limit: Duration = .seconds(30),
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let deadline = ContinuousClock.now + limit
        var pending = 0, shown = false
        let showBackendsAt = ContinuousClock.now + limit / 3
        repeat {
            pending = try await pool.query("SELECT count(*) AS n FROM outbox WHERE status = 'pending'")[0].decode(
                "n", as: Int.self)
            if pending == 0 { return }
            if !shown, ContinuousClock.now > showBackendsAt {
                shown = true
                print("outbox drain slow: \(pending) pending; backends: \(await backends(pool))")
            }
            try await Task.sleep(for: .milliseconds(50))
        } while ContinuousClock.now < deadline
        let stuck =
            (try? await pool.query(
                """
                SELECT event_type, target, aggregate_key, is_head, placed, attempts, last_error, lease_until::text AS lease,
                       (next_attempt_at - now())::text AS due_in
                FROM outbox WHERE status = 'pending' ORDER BY id LIMIT 10
                """
            ).map { row in
                [
                    "event_type", "target", "aggregate_key", "is_head", "placed", "attempts", "last_error", "lease",
                    "due_in",
                ]
                .map { "\($0)=\((try? row.decode($0, as: String?.self)).flatMap { $0 } ?? "-")" }.joined(separator: " ")
            }) ?? []
        Issue.record(
            "\(pending) outbox rows still pending after \(limit): \(stuck.joined(separator: "; "))",
            sourceLocation: sourceLocation)
    }

    /// What every session of this database is doing, for a drain that takes long.
    private static func backends(_ pool: PostgresPool) async -> String {
        let rows =
            (try? await pool.query(
                """
                SELECT pid, state, wait_event_type, wait_event, (now() - xact_start)::text AS xact_age, pg_blocking_pids(pid)::text AS blocked_by,
                       left(query, 160) AS query
                FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()
                """)) ?? []
        return rows.map { row in
            ["pid", "state", "wait_event_type", "wait_event", "xact_age", "blocked_by", "query"]
                .map { "\($0)=\((try? row.decode($0, as: String?.self)).flatMap { $0 } ?? "-")" }.joined(separator: " ")
        }.joined(separator: " | ")
    }
}
