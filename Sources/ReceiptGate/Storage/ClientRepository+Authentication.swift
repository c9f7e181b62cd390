import Foundation
import Postgres
import ReceiptCore

/// An enabled client as one read found it, with what authenticating a request needs: the row,
/// its opened secret and the version it had (see migration 12). What `ClientDirectory` answers.
struct AuthenticatedClient: Sendable {
    let client: Client
    let secret: String
    let version: Int64
    /// Read from the standby while the primary could not be reached: never cached, and anything
    /// that writes checks the client again on the primary.
    var fromStandby = false
}

extension ClientRepository {
    /// The client with its secret and version in one read; nil for an unknown or disabled client.
    /// While the primary cannot be reached (a failover under way), the read standby's copy
    /// authenticates instead, so reads the standby serves go on; anything that writes still needs
    /// the primary, and checks the client's version there.
    func authenticationEntry(for clientID: String) async throws -> AuthenticatedClient? {
        // What a caller sends as an id may be anything (a NUL, a megabyte): only the form ids are
        // issued in can name a client, and anything else is unknown without asking Postgres.
        guard Self.isIssuedID(clientID) else { return nil }
        let query: PostgresQuery =
            "SELECT \(unescaped: Self.columns), secret_ciphertext, version FROM clients WHERE id = \(clientID)"
        let rows: [PostgresRow]
        var fromStandby = false
        do {
            rows = try await pool.query(query)
        } catch let error as PostgresError where Self.primaryUnreachable(error) {
            // Not for a primary that is only busy (a pool timeout): there, wait for it.
            guard let standby else { throw error }
            rows = try await standby.query(query)
            fromStandby = true
        }
        guard let row = rows.first else { return nil }
        let client = try Self.decode(row)
        guard !client.disabled else { return nil }
        return AuthenticatedClient(
            client: client,
            secret: try secrets.open(try row.decode("secret_ciphertext", as: Data.self), owner: clientID),
            version: try row.decode("version"), fromStandby: fromStandby)
    }

    static let idPrefix = "rgc_"
    static let idRandomBytes = 12

    /// The one form client ids are issued in: `rgc_` and 24 lowercase hex digits.
    static func isIssuedID(_ id: String) -> Bool {
        let utf8 = id.utf8
        guard utf8.count == idPrefix.utf8.count + 2 * idRandomBytes, id.hasPrefix(idPrefix) else { return false }
        return utf8.dropFirst(idPrefix.utf8.count).allSatisfy {
            (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0)
        }
    }

    /// The primary is down, restarting or read-only (a failover under way), as `DatabaseOutage`
    /// reads it, but not merely out of free connections.
    static func primaryUnreachable(_ error: PostgresError) -> Bool {
        DatabaseOutage.matches(error) && error.code != .poolTimeout
    }

    /// Inside a recording transaction: whether the client is still enabled at `version`. A rotation
    /// or disable committed before this statement is seen; one still running overlaps the request.
    /// First holds the client's catalog scope shared until the commit (`CatalogScopeLock`): a
    /// catalog change waits for this claim, or committed before this check (a new version, so the
    /// claim reloads); the catalog the claim decided under is never older than one a refresh after
    /// the change reads. The scope is the cached client's: had it moved game, its version moved too.
    static func isCurrent(_ client: ClientInfo, version: Int64, on connection: PostgresConnection) throws -> Bool {
        try CatalogScopeLock.share(client.scope, on: connection)
        return try !connection.query(
            """
            SELECT 1 FROM clients WHERE id = \(client.clientID) AND version = \(version) AND disabled_at IS NULL
            """
        ).isEmpty
    }

    /// Inside a store event's transaction: holds the client's catalog scope as a claim does
    /// (`isCurrent`), then reads the products its game's catalogs map, as of now.
    static func heldGameCatalog(of clientID: String, on connection: PostgresConnection) throws -> Set<String> {
        try CatalogScopeLock.shareScope(of: clientID, on: connection)
        return Set(
            try connection.query("SELECT \(unescaped: gameCatalogColumn) FROM clients WHERE id = \(clientID)").first?
                .decode("game_catalog", as: [String].self) ?? [])
    }
}
