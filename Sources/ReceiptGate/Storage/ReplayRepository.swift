import Foundation
import Postgres
import ReceiptCore

/// What was seen recently, remembered in Postgres so every process agrees (`ReplayGuard`).
struct ReplayRepository: ReplayGuard {
    let pool: PostgresPool

    /// One statement: a new key is inserted; a key whose window has passed is taken over; a key
    /// still inside its window is refused.
    func firstSeen(_ key: String, window: Duration) async throws -> Bool {
        let seconds = Int(window.components.seconds)
        let rows = try await pool.query(
            """
            INSERT INTO request_signatures (signature, expires_at) VALUES (\(key), now() + make_interval(secs => \(seconds)))
            ON CONFLICT (signature) DO UPDATE SET expires_at = EXCLUDED.expires_at WHERE request_signatures.expires_at < now()
            RETURNING signature
            """)
        return !rows.isEmpty
    }

    func removeExpired() async throws {
        try await pool.execute("DELETE FROM request_signatures WHERE expires_at < now()")
    }
}

/// Rate-limit counters shared by every process: one row per policy, key and window.
struct RateLimitRepository: Sendable {
    let pool: PostgresPool

    /// Counts one hit; returns the hits in the current window and the seconds left in it.
    func hit(policy: String, key: String, windowSeconds: Int) async throws -> (hits: Int, secondsLeft: Int) {
        let rows = try await pool.query(
            """
            WITH slot AS (SELECT to_timestamp(floor(extract(epoch FROM now()) / \(windowSeconds)) * \(windowSeconds)) AS start)
            INSERT INTO rate_limit_counters (policy, key, window_start, hits)
            SELECT \(policy), \(key), start, 1 FROM slot
            ON CONFLICT (policy, key, window_start) DO UPDATE SET hits = rate_limit_counters.hits + 1
            RETURNING hits, ceil(extract(epoch FROM window_start + make_interval(secs => \(windowSeconds)) - now()))::int AS seconds_left
            """)
        guard let row = rows.first else { throw PostgresError(.queryFailed, "rate limit upsert returned no row") }
        return (try row.decode("hits"), max(1, try row.decode("seconds_left", as: Int.self)))
    }

    /// Takes back one hit of the current window (a limit that counts only failures, told of a success).
    func forgive(policy: String, key: String, windowSeconds: Int) async throws {
        try await pool.execute(
            """
            UPDATE rate_limit_counters SET hits = hits - 1
            WHERE policy = \(policy) AND key = \(key) AND hits > 0
              AND window_start = to_timestamp(floor(extract(epoch FROM now()) / \(windowSeconds)) * \(windowSeconds))
            """)
    }

    /// Windows that ended are only history.
    func removeExpired() async throws {
        try await pool.execute("DELETE FROM rate_limit_counters WHERE window_start < now() - interval '1 day'")
    }
}
