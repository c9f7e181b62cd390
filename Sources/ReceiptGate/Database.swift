public import Foundation
public import Postgres
public import ReceiptCore

/// Opens the database the configuration names, or the embedded cluster under the data folder.
public struct Database: Sendable {
    public let pool: PostgresPool
    /// The embedded cluster if this process started it (and so must stop it at shutdown).
    public let startedCluster: EmbeddedCluster?
    /// Where the data lives, for messages (never includes a password).
    public let description: String

    public static func open(_ configuration: ServiceConfiguration, logger: Logger) throws -> Database {
        if let url = configuration.databaseURL {
            let pool = PostgresPool(.init(connectionString: url, size: configuration.databasePoolSize))
            return Database(pool: pool, startedCluster: nil, description: "DATABASE_URL")
        }
        let cluster = EmbeddedCluster(directory: configuration.dataDirectory.appendingPathComponent("postgres")) { message in
            logger.info(message)
        }
        let started = try cluster.start()
        let pool = PostgresPool(.init(connectionString: try cluster.connectionString, size: configuration.databasePoolSize))
        return Database(pool: pool, startedCluster: started ? cluster : nil,
                        description: "embedded cluster at \(try cluster.clusterDirectory.path)")
    }

    /// Applies pending migrations (under the advisory lock) and returns the versions applied.
    @discardableResult
    public func migrate() async throws -> [Int] {
        try await Migrator.migrate(pool, migrations: Schema.migrations)
    }

    /// Closes the pool and stops the embedded cluster if this process started it.
    public func close(logger: Logger) {
        pool.shutdown()
        if let startedCluster {
            do { try startedCluster.stop() } catch { logger.error("could not stop the embedded database", ["error": "\(error)"]) }
        }
    }
}

public enum ReceiptGateVersion {
    public static let current = "0.1.0"
}
