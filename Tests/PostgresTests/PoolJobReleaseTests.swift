import Foundation
import Postgres
import Synchronization
import TestSupport
import Testing

/// The libpq pool lets go of a job once it has run (a statement's parameters, what its body
/// captured), and skips the job of a caller cancelled while it waited for a connection.
@Suite struct PoolJobRelease {
    @Test func whatAStatementsBodyCapturedIsFreedOnceItHasRun() async throws {
        let pool = PostgresPool(
            PostgresPool.Configuration(connectionString: try await TestDatabase.makeDatabase(), size: 1))
        defer { pool.shutdown() }
        var weak: WeakBox?
        do {
            let object = Captured()
            weak = WeakBox(object)
            _ = try await pool.withConnection { connection in
                _ = object
                return try connection.query("SELECT 1 AS one").count
            }
        }
        let watched = try #require(weak)
        #expect(await eventually { watched.isReleased }, "the pool still holds a job it ran")
    }

    @Test func aCallerCancelledWhileWaitingForAConnectionRunsNothing() async throws {
        let pool = PostgresPool(
            PostgresPool.Configuration(connectionString: try await TestDatabase.makeDatabase(), size: 1))
        defer { pool.shutdown() }
        try await pool.execute("CREATE TABLE marks (note text)")
        let holding = Flag(), release = Flag()
        let busy = Task {
            try await pool.withConnection { _ in
                holding.raise()
                while !release.isRaised { usleep(1_000) }
            }
        }
        let deadline = ContinuousClock.now + .seconds(30)
        while !holding.isRaised && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(2)) }
        let cancelled = Task { try await pool.execute("INSERT INTO marks VALUES ('cancelled')") }
        while pool.waitingJobs < 1 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(2)) }
        cancelled.cancel()
        // the only connection is still held
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        release.raise()
        try await busy.value
        // Jobs run in order: the cancelled one has been passed by the time this one runs.
        #expect(try await pool.query("SELECT count(*)::int AS n FROM marks")[0].decode("n", as: Int.self) == 0)
    }
}
