/// A numbered schema change. Versions are applied in ascending order, each exactly once.
public struct Migration: Sendable {
    package let version: Int
    package let name: String
    package let sql: String

    package init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
    }
}

/// Applies pending migrations under a session advisory lock, so several processes starting at
/// once take turns: the first applies, the others find nothing left to do.
package enum Migrator {
    /// An arbitrary constant shared by every ReceiptGate process ("RGMIGRAT" in ASCII).
    package static let advisoryLockKey: Int64 = 0x5247_4D49_4752_4154

    /// Returns the versions this call applied.
    @discardableResult
    package static func migrate(_ pool: PostgresPool, migrations: [Migration]) async throws -> [Int] {
        let ordered = migrations.sorted { $0.version < $1.version }
        precondition(Set(ordered.map(\.version)).count == ordered.count, "duplicate migration versions")
        return try await pool.withConnection { connection in
            try connection.execute("SELECT pg_advisory_lock(\(advisoryLockKey))")
            defer { _ = try? connection.execute("SELECT pg_advisory_unlock(\(advisoryLockKey))") }
            try connection.executeScript(
                """
                CREATE TABLE IF NOT EXISTS schema_migrations (
                    version integer PRIMARY KEY,
                    name text NOT NULL,
                    applied_at timestamptz NOT NULL DEFAULT now()
                )
                """)
            let applied = Set(
                try connection.query("SELECT version FROM schema_migrations").map {
                    try $0.decode("version", as: Int.self)
                })
            var appliedNow: [Int] = []
            for migration in ordered where !applied.contains(migration.version) {
                try connection.execute("BEGIN")
                do {
                    try connection.executeScript(migration.sql)
                    try connection.execute(
                        "INSERT INTO schema_migrations (version, name) VALUES (\(migration.version), \(migration.name))"
                    )
                    try connection.execute("COMMIT")
                } catch {
                    _ = try? connection.execute("ROLLBACK")
                    throw PostgresError(
                        .queryFailed, "migration \(migration.version) (\(migration.name)) failed: \(error)")
                }
                appliedNow.append(migration.version)
            }
            return appliedNow
        }
    }
}
