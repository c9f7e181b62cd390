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


    /// One run, as the console shows it.
    struct Run: Sendable {
        let poll: String, process: String, startedAt: Date, finishedAt: Date, found: Int, new: Int, error: String?
    }

    /// Records a run (both times by this process's clock, so its length is never skewed); keeps
    /// the last `kept` runs of each poll.
    func recordRun(_ poll: String, process: String, startedAt: Date, found: Int, new: Int, error: String?, kept: Int = 200) async throws {
        try await pool.execute("""
            INSERT INTO store_poll_runs (poll, process, started_at, finished_at, found, new, error)
            VALUES (\(poll), \(process), to_timestamp(\(startedAt.timeIntervalSince1970)::float8),
                    to_timestamp(\(Date().timeIntervalSince1970)::float8), \(found), \(new), \(error))
            """)
        try await pool.execute("""
            DELETE FROM store_poll_runs WHERE poll = \(poll)
              AND id <= (SELECT id FROM store_poll_runs WHERE poll = \(poll) ORDER BY id DESC OFFSET \(kept) LIMIT 1)
            """)
    }

    /// The latest runs of every poll, newest first.
    func recentRuns(limit: Int) async throws -> [Run] {
        try await pool.query("""
            SELECT poll, process, extract(epoch FROM started_at)::float8 AS started, extract(epoch FROM finished_at)::float8 AS finished,
                   found, new, error
            FROM store_poll_runs ORDER BY id DESC LIMIT \(limit)
            """).map { row in
            Run(poll: try row.decode("poll", as: String.self), process: try row.decode("process", as: String.self),
                startedAt: Date(timeIntervalSince1970: try row.decode("started", as: Double.self)),
                finishedAt: Date(timeIntervalSince1970: try row.decode("finished", as: Double.self)),
                found: try row.decode("found", as: Int.self), new: try row.decode("new", as: Int.self),
                error: try row.decode("error", as: String?.self))
        }
    }
}

struct PollLeaseLost: Error, CustomStringConvertible {
    let name: String
    var description: String { "the lease of poll \(name) was lost to another process" }
}
