import Foundation
import Postgres

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
        let query: PostgresQuery = "SELECT \(unescaped: Self.columns), secret_ciphertext, version FROM clients WHERE id = \(clientID)"
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
        return AuthenticatedClient(client: client, secret: try secrets.open(try row.decode("secret_ciphertext", as: Data.self), owner: clientID),
                                   version: try row.decode("version"), fromStandby: fromStandby)
    }

    /// The primary is down, restarting or read-only (a failover under way), as `DatabaseOutage`
    /// reads it, but not merely out of free connections.
    static func primaryUnreachable(_ error: PostgresError) -> Bool {
        DatabaseOutage.matches(error) && error.code != .poolTimeout
    }

    /// Inside a recording transaction: whether the client is still enabled at `version`. A rotation
    /// or disable committed before this statement is seen; one still running overlaps the request.
    static func isCurrent(_ clientID: String, version: Int64, on connection: PostgresConnection) throws -> Bool {
        try !connection.query("""
            SELECT 1 FROM clients WHERE id = \(clientID) AND version = \(version) AND disabled_at IS NULL
            """).isEmpty
    }
}
