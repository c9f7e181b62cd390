import Foundation
import HTTPServer
import Postgres
import ReceiptCore
import ReceiptGate

/// What every command shares: configuration read once from the environment, and the logger.
struct CommandContext {
    let configuration: ServiceConfiguration
    let logger: Logger
    /// Whether a missing data directory (embedded database, master key) is made (`serve`, `init`)
    /// or refused: every other command works on the service's data and must find it.
    var creating = false

    /// Opens the database (starting the embedded cluster if needed), migrates unless told not
    /// to, runs `body`, then closes everything it opened.
    func withDatabase<T>(migrating: Bool = true, _ body: (Database) async throws -> T) async throws -> T {
        let database = try await Database.opened(configuration, logger: logger, creating: creating)
        do {
            if migrating { try await database.migrate() }
            let result = try await body(database)
            await database.closed(logger: logger)
            return result
        } catch {
            await database.closed(logger: logger)
            throw error
        }
    }

    func withClients<T>(_ body: (ClientRepository) async throws -> T) async throws -> T {
        try await withRepositories { try await body($0.clients) }
    }

    func withRepositories<T>(_ body: (Repositories) async throws -> T) async throws -> T {
        try await withDatabase { database in
            let master = try SecretBox.loadMasterKey(
                configured: configuration.masterKey, dataDirectory: configuration.dataDirectory,
                creating: creating)
            if let path = master.generatedAt {
                logger.warning(
                    "generated a new master key; back it up, and give every process sharing this database the same key",
                    ["path": path])
            }
            return try await body(Repositories(database: database, secrets: SecretBox(masterKey: master.key)))
        }
    }

    func printJSON(_ value: some Encodable) throws {
        try Self.printJSON(value)
    }

    static func printJSON(_ value: some Encodable) throws {
        let encoder = JSONEncoder.receiptGate
        encoder.dateEncodingStrategy = .iso8601
        let data = try encoder.encode(value)
        FileHandle.standardOutput.write(data + Data("\n".utf8))
    }
}

/// A CommandContext made on first use, so argument mistakes are reported before configuration
/// is read or the database is started.
struct LazyContext {
    func withClients<T>(_ body: (ClientRepository) async throws -> T) async throws -> T {
        try await ReceiptGateCommand.makeContext().withClients(body)
    }

    func printJSON(_ value: some Encodable) throws {
        try CommandContext.printJSON(value)
    }
}
