import Foundation
import ReceiptGate

/// `receiptgate init`: what `serve` would make on its first run (the embedded cluster, the master
/// key, the schema), made without serving, so commands can be run before the service starts.
enum InitCommand {
    struct Made: Encodable {
        let dataDirectory: String
        /// Where the ledger is: the embedded cluster, or DATABASE_URL (never the URL itself: it may hold a password).
        let database: String
        /// Where the master key came from: RECEIPTGATE_MASTER_KEY, or its file (made now or found).
        let masterKey: String
        let masterKeyCreated: Bool
        let migrationsApplied: [Int]

        enum CodingKeys: String, CodingKey {
            case dataDirectory = "data_directory", database, masterKey = "master_key", masterKeyCreated =
                "master_key_created"
            case migrationsApplied = "migrations_applied"
        }
    }

    static func run(context: CommandContext) async throws {
        let configuration = context.configuration
        let made = try await context.withDatabase(migrating: false) { database in
            let applied = try await database.migrate()
            try await refuseANewKeyForSealedData(configuration, database: database)
            let master = try SecretBox.loadMasterKey(
                configured: configuration.masterKey, dataDirectory: configuration.dataDirectory, creating: true)
            let keyFile = configuration.dataDirectory.appendingPathComponent("master.key").standardizedFileURL.path
            return Made(
                dataDirectory: configuration.dataDirectory.standardizedFileURL.path, database: database.description,
                masterKey: configuration.masterKey == nil ? keyFile : "RECEIPTGATE_MASTER_KEY",
                masterKeyCreated: master.generatedAt != nil,
                migrationsApplied: applied)
        }
        try context.printJSON(made)
    }

    /// A new key beside a database that already holds clients would seal new secrets the service
    /// cannot open and open none of the old: the key that sealed them is wanted instead.
    static func refuseANewKeyForSealedData(_ configuration: ServiceConfiguration, database: Database) async throws {
        let keyFile = configuration.dataDirectory.appendingPathComponent("master.key")
        guard configuration.masterKey == nil, !FileManager.default.fileExists(atPath: keyFile.path),
            try await database.holdsClients()
        else { return }
        throw ServiceConfiguration.Invalid(
            variable: "RECEIPTGATE_MASTER_KEY",
            problem: """
                not set, and there is no master key at \(keyFile.standardizedFileURL.path), while the database (\(database.description)) \
                already holds clients sealed under one; set it to that key (or restore its file) rather than make a new one
                """)
    }
}
