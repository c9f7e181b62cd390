import Foundation
import Postgres
import Synchronization
import TestSupport
import Testing

/// A caller that cannot get a connection in time hears so, instead of its work running long after
/// it gave up; the pool serves the next caller as usual.
@Suite struct PoolLeaseTimeout {
    @Test func aCallerStuckBehindABusyPoolGetsPoolTimeoutAndItsStatementNeverRuns() async throws {
        var configuration = PostgresPool.Configuration(connectionString: try await TestDatabase.makeDatabase(), size: 1)
        configuration.leaseTimeout = .milliseconds(100)
        let pool = PostgresPool(configuration)
        defer { pool.shutdown() }
        _ = try await Self.untilServed { try await pool.execute("CREATE TABLE marks (note text)") }

        // The only connection is held until the statement under test has been answered (with the
        // pool's timeout, or, were that broken, by running), however late the machine gets to it:
        // the hold is a condition, not a sleep. Started, not merely taken: a job picked up late is
        // answered with a timeout (and taken again).
        let sleeping = Flag(), answered = Flag()
        let busy = Task {
            try await Self.untilServed {
                try await pool.withConnection { connection in
                    sleeping.raise()
                    let deadline = Date(timeIntervalSinceNow: 60)
                    while !answered.isRaised && Date() < deadline { usleep(1_000) }
                    return try connection.execute("SELECT 1")
                }
            }
        }
        let deadline = ContinuousClock.now + .seconds(60)
        while !sleeping.isRaised {  // the busy job holds the only connection
            guard ContinuousClock.now < deadline else {
                Issue.record("the busy statement never started")
                return
            }
            try await Task.sleep(for: .milliseconds(5))
        }
        do {
            try await pool.execute("INSERT INTO marks VALUES ('late')")
            Issue.record("a statement ran after waiting past the lease timeout")
        } catch let error as PostgresError {
            #expect(error.code == .poolTimeout)
        }
        answered.raise()
        _ = try await busy.value
        #expect(
            try await Self.untilServed {
                try await pool.query("SELECT count(*)::int AS n FROM marks")[0].decode("n", as: Int.self)
            } == 0)
        _ = try await Self.untilServed { try await pool.execute("INSERT INTO marks VALUES ('in time')") }
        #expect(
            try await Self.untilServed {
                try await pool.query("SELECT count(*)::int AS n FROM marks")[0].decode("n", as: Int.self)
            } == 1)
    }

    /// The statements around the one under test retry a lease timeout: on a loaded machine even an
    /// idle pool's thread can take longer than 0.1 s to pick a job up (and a busy statement that
    /// timed out would leave the wait above waiting for nothing).
    static func untilServed<T>(_ body: () async throws -> T) async throws -> T {
        let deadline = ContinuousClock.now + .seconds(60)
        while true {
            do {
                return try await body()
            } catch let error as PostgresError where error.code == .poolTimeout && ContinuousClock.now < deadline {
                continue
            }
        }
    }
}

/// Set once, read from any thread.
final class Flag: Sendable {
    private let raised = Mutex(false)

    func raise() { raised.withLock { $0 = true } }
    var isRaised: Bool { raised.withLock { $0 } }
}
