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
        let taken = try await pool.execute(
            """
            UPDATE store_polls SET lease_owner = \(owner), lease_until = clock_timestamp() + make_interval(secs => \(seconds)::float8)
            WHERE name = \(name) AND (lease_until IS NULL OR lease_until < clock_timestamp())
            """)
        return taken == 1
    }

    /// Keeps the lease until `seconds` from now (the next run is due then), noting the run.
    func finish(_ name: String, owner: String, nextInSeconds seconds: Double) async throws {
        try await pool.execute(
            """
            UPDATE store_polls SET lease_until = clock_timestamp() + make_interval(secs => \(seconds)::float8), last_run_at = clock_timestamp()
            WHERE name = \(name) AND lease_owner = \(owner)
            """)
    }

    func cursor(_ key: String) async throws -> String? {
        try await pool.query("SELECT value FROM store_poll_cursors WHERE key = \(key)").first?.decode(
            "value", as: String.self)
    }

    /// Saves a cursor only while `owner` still holds the lease of `name`, extending it.
    func setCursor(_ key: String, to value: String, name: String, owner: String, leaseSeconds: Double) async throws {
        let held = try await pool.execute(
            """
            UPDATE store_polls SET lease_until = clock_timestamp() + make_interval(secs => \(leaseSeconds)::float8)
            WHERE name = \(name) AND lease_owner = \(owner) AND lease_until >= clock_timestamp()
            """)
        guard held == 1 else { throw PollLeaseLost(name: name) }
        try await pool.execute(
            """
            INSERT INTO store_poll_cursors (key, value) VALUES (\(key), \(value))
            ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()
            """)
    }

    /// One run, as the console and `receiptgate reconcile` show it.
    struct Run: Sendable, Encodable {
        var poll: String, process: String, startedAt: Date, finishedAt: Date
        var tally: PollTally
        var byHand: Bool
        var error: String?

        enum CodingKeys: String, CodingKey {
            case poll, process, startedAt = "started_at", finishedAt = "finished_at", byHand = "by_hand", error
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(poll, forKey: .poll)
            try container.encode(process, forKey: .process)
            try container.encode(startedAt, forKey: .startedAt)
            try container.encode(finishedAt, forKey: .finishedAt)
            try container.encode(byHand, forKey: .byHand)
            try container.encode(error, forKey: .error)
            try tally.encode(to: encoder)
        }
    }

    /// Records a run (both times by this process's clock, so its length is never skewed); keeps
    /// the last `kept` runs of each poll.
    func recordRun(_ run: Run, kept: Int = 200) async throws {
        let tally = run.tally
        try await pool.execute(
            """
            INSERT INTO store_poll_runs (poll, process, started_at, finished_at, found, new, pages, reread, changed, by_hand, error)
            VALUES (\(run.poll), \(run.process), to_timestamp(\(run.startedAt.timeIntervalSince1970)::float8),
                    to_timestamp(\(run.finishedAt.timeIntervalSince1970)::float8), \(tally.found), \(tally.new), \(tally.pages),
                    \(tally.reread), \(tally.changed), \(run.byHand), \(run.error))
            """)
        try await pool.execute(
            """
            DELETE FROM store_poll_runs WHERE poll = \(run.poll)
              AND id <= (SELECT id FROM store_poll_runs WHERE poll = \(run.poll) ORDER BY id DESC OFFSET \(kept) LIMIT 1)
            """)
    }

    /// The latest runs of every poll, newest first.
    func recentRuns(limit: Int) async throws -> [Run] {
        try await pool.query(
            """
            SELECT poll, process, extract(epoch FROM started_at)::float8 AS started, extract(epoch FROM finished_at)::float8 AS finished,
                   found, new, pages, reread, changed, by_hand, error
            FROM store_poll_runs ORDER BY id DESC LIMIT \(limit)
            """
        ).map { row in
            Run(
                poll: try row.decode("poll", as: String.self), process: try row.decode("process", as: String.self),
                startedAt: Date(timeIntervalSince1970: try row.decode("started", as: Double.self)),
                finishedAt: Date(timeIntervalSince1970: try row.decode("finished", as: Double.self)),
                tally: PollTally(
                    found: try row.decode("found", as: Int.self), new: try row.decode("new", as: Int.self),
                    pages: try row.decode("pages", as: Int.self), reread: try row.decode("reread", as: Int.self),
                    changed: try row.decode("changed", as: Int.self)),
                byHand: try row.decode("by_hand", as: Bool.self), error: try row.decode("error", as: String?.self))
        }
    }
}

/// What one poll run read and did.
struct PollTally: Sendable, Equatable, Encodable {
    /// Notifications found, and how many of them no push had delivered.
    var found = 0, new = 0
    /// Pages read from the store, and subscriptions read back.
    var pages = 0, reread = 0
    /// Changes of the ledger's state the run made (each told by a webhook).
    var changed = 0
}

struct PollLeaseLost: Error, CustomStringConvertible {
    let name: String
    var description: String { "the lease of poll \(name) was lost to another process" }
}
