import Foundation
import Postgres
import ReceiptCore

/// Scheduled polls' leases and cursors (`store_polls`). A lease is a row, not a session advisory
/// lock: the pool hands connections around, and a lease held by a crashed process simply runs out.
struct PollRepository: Sendable {
    let pool: PostgresPool

    /// Takes the poll `name` for `seconds` unless another process holds it; true if this one does now.
    func acquire(_ name: String, owner: String, seconds: Double) async throws -> Bool {
        try await pool.execute("INSERT INTO store_polls (name) VALUES (\(name)) ON CONFLICT (name) DO NOTHING")
        let taken = try await pool.execute("""
            UPDATE store_polls SET lease_owner = \(owner), lease_until = clock_timestamp() + make_interval(secs => \(seconds)::float8)
            WHERE name = \(name) AND (lease_until IS NULL OR lease_until < clock_timestamp())
            """)
        return taken == 1
    }

    /// Keeps the lease until `seconds` from now (the next run is due then), noting the run.
    func finish(_ name: String, owner: String, nextInSeconds seconds: Double) async throws {
        try await pool.execute("""
            UPDATE store_polls SET lease_until = clock_timestamp() + make_interval(secs => \(seconds)::float8), last_run_at = clock_timestamp()
            WHERE name = \(name) AND lease_owner = \(owner)
            """)
    }

    func cursor(_ key: String) async throws -> String? {
        try await pool.query("SELECT value FROM store_poll_cursors WHERE key = \(key)").first?.decode("value", as: String.self)
    }

    /// Saves a cursor only while `owner` still holds the lease of `name`, extending it.
    func setCursor(_ key: String, to value: String, name: String, owner: String, leaseSeconds: Double) async throws {
        let held = try await pool.execute("""
            UPDATE store_polls SET lease_until = clock_timestamp() + make_interval(secs => \(leaseSeconds)::float8)
            WHERE name = \(name) AND lease_owner = \(owner) AND lease_until >= clock_timestamp()
            """)
        guard held == 1 else { throw PollLeaseLost(name: name) }
        try await pool.execute("""
            INSERT INTO store_poll_cursors (key, value) VALUES (\(key), \(value))
            ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()
            """)
    }
}

struct PollLeaseLost: Error, CustomStringConvertible {
    let name: String
    var description: String { "the lease of poll \(name) was lost to another process" }
}
