import Foundation
import Postgres
import TestSupport
import Testing

/// After a failover, the server a connection holds can be a standby that refuses every write.
@Suite struct ReadOnlyServer {
    @Test func aConnectionWhoseServerRefusesWritesIsReplaced() async throws {
        let pool = PostgresPool(
            .init(connectionString: try await TestDatabase.makeDatabase(prefix: "readonly"), size: 1))
        defer { pool.shutdown() }
        // What a demoted primary looks like to a session: every transaction is read-only.
        try await pool.execute("SET SESSION default_transaction_read_only = on")
        do {
            try await pool.execute("CREATE TABLE written (id int)")
            Issue.record("a write succeeded on a read-only session")
        } catch let error as PostgresError {
            #expect(error.sqlState == "25006")
            #expect(error.isRetryable)
        }
        // The one pooled connection was dropped: the next job gets a fresh, writable session.
        try await pool.execute("CREATE TABLE written (id int)")
        #expect(try await pool.query("SELECT count(*) AS n FROM written")[0].decode("n", as: Int.self) == 0)
    }
}
