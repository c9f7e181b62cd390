import Foundation
import Postgres
import Testing

enum OutboxDrain {
    /// Waits until no outbox row is pending: each was delivered or given up, so no worker can
    /// claim it again and what a receiver got is all it will get. Tests wait for this instead of
    /// sleeping "to see that nothing else arrives". Not draining within `limit` is a failure.
    static func wait(_ pool: PostgresPool, within limit: Duration = .seconds(30),
                     sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let deadline = ContinuousClock.now + limit
        var pending = 0
        repeat {
            pending = try await pool.query("SELECT count(*) AS n FROM outbox WHERE status = 'pending'")[0].decode("n", as: Int.self)
            if pending == 0 { return }
            try await Task.sleep(for: .milliseconds(50))
        } while ContinuousClock.now < deadline
        Issue.record("\(pending) outbox rows still pending after \(limit)", sourceLocation: sourceLocation)
    }
}
