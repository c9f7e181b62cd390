import Foundation
package import Postgres
package import ReceiptCore
import Workers

/// Opens the database the configuration names, or the embedded cluster under the data folder.
public struct Database: Sendable {
    /// Package-wide, not public: the service reaches the database through repositories; tests read it directly.
    package let pool: PostgresPool
    /// The embedded cluster, when that is what this process uses: the last process out stops it.
    package let embeddedCluster: EmbeddedCluster?
    /// Where the data lives, for messages (never includes a password).
    package let description: String
    /// A standby that serves the ledger read API (DATABASE_READ_URL), when one is configured.
    package var readPool: PostgresPool?
    /// The outbox worker's own connections to the primary: deliveries are recorded as they happen
    /// however busy verifications keep the main pool, so a backlog drains under full load.
    package let outboxPool: PostgresPool

    /// `creating`: with no DATABASE_URL, start a new embedded cluster when the data directory
    /// holds none (`serve`, `init`); otherwise its absence is a configuration error naming where
    /// it was looked for, so a command run from the wrong folder never answers from an empty ledger.
    /// `open` on a thread of its own: an embedded cluster's `initdb` and `pg_ctl` wait for seconds.
    package static func opened(
        _ configuration: ServiceConfiguration, logger: Logger, creating: Bool = true
    ) async throws -> Database {
        try await SharedWorkers.waits.run { try open(configuration, logger: logger, creating: creating) }
    }

    package static func open(
        _ configuration: ServiceConfiguration, logger: Logger, creating: Bool = true
    ) throws -> Database {
        var database = try openPrimary(configuration, logger: logger, creating: creating)
        database.readPool = configuration.databaseReadURL.map {
            PostgresPool(.init(connectionString: $0, size: configuration.databasePoolSize))
        }
        return database
    }

    private static func openPrimary(
        _ configuration: ServiceConfiguration, logger: Logger, creating: Bool
    ) throws -> Database {
        if let url = configuration.databaseURL {
            let pool = PostgresPool(.init(connectionString: url, size: configuration.databasePoolSize))
            return Database(
                pool: pool, embeddedCluster: nil, description: "DATABASE_URL", outboxPool: Self.outboxPool(url))
        }
        let cluster = EmbeddedCluster(directory: configuration.dataDirectory.appendingPathComponent("postgres")) {
            message in
            logger.info(message)
        }
        guard creating || cluster.exists else {
            throw ServiceConfiguration.missingDataDirectory(configuration.dataDirectory)
        }
        try cluster.start()
        let pool = PostgresPool(
            .init(connectionString: try cluster.connectionString, size: configuration.databasePoolSize))
        return Database(
            pool: pool, embeddedCluster: cluster,
            description: "embedded cluster at \(try cluster.clusterDirectory.path)",
            outboxPool: Self.outboxPool(try cluster.connectionString))
    }

    /// Applies pending migrations (under the advisory lock) and returns the versions applied.
    @discardableResult
    package func migrate() async throws -> [Int] {
        try await Migrator.migrate(pool, migrations: Schema.migrations)
    }

    /// Whether any client is registered (its secrets sealed under some master key).
    package func holdsClients() async throws -> Bool {
        try await pool.query("SELECT EXISTS (SELECT 1 FROM clients) AS held")[0].decode("held", as: Bool.self)
    }

    /// Whether the database answers a trivial query.
    package func ping() async throws {
        _ = try await pool.query("SELECT 1")
    }

    package var poolStatistics: PostgresPool.Statistics { pool.statistics }

    /// Two connections: the worker places, claims and records in short statements of its own.
    private static func outboxPool(_ connectionString: String) -> PostgresPool {
        PostgresPool(.init(connectionString: connectionString, size: 2))
    }

    /// Closes the pools and stops the embedded cluster unless another ReceiptGate process still uses it.
    /// `close` on a thread of its own (`pg_ctl stop` waits for the cluster to stop), in a task of
    /// its own so a cancelled caller still closes (here, at worst).
    package func closed(logger: Logger) async {
        let database = self
        let done =
            (try? await Task { try await SharedWorkers.waits.run { database.close(logger: logger) } }.value) != nil
        if !done { close(logger: logger) }
    }

    package func close(logger: Logger) {
        pool.shutdown()
        outboxPool.shutdown()
        readPool?.shutdown()
        if let embeddedCluster {
            do { try embeddedCluster.stopIfUnused() } catch {
                logger.error("could not stop the embedded database", ["error": "\(error)"])
            }
        }
    }
}

package enum ReceiptGateVersion {
    package static let current = "0.1.0"
}
