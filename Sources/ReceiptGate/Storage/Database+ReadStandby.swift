import Postgres

extension Database {
    /// How far the read standby (DATABASE_READ_URL) is behind, in seconds: 0 once it has replayed
    /// everything it received, else the age of the last transaction it replayed (so a standby cut
    /// off from its primary shows a growing lag, not 0). Nil when no read standby is configured.
    func readStandbyLagSeconds() async throws -> Double? {
        guard let readPool else { return nil }
        let rows = try await readPool.query("""
            SELECT (CASE WHEN NOT pg_is_in_recovery() OR pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
                         ELSE coalesce(extract(epoch FROM now() - pg_last_xact_replay_timestamp()), 0) END)::float8 AS lag
            """)
        return try rows.first?.decode("lag", as: Double.self)
    }
}

extension TransactionRepository {
    /// The same reads through another pool (the read standby). Never write through it.
    func reading(through pool: PostgresPool) -> TransactionRepository {
        TransactionRepository(pool: pool, secrets: secrets)
    }
}
