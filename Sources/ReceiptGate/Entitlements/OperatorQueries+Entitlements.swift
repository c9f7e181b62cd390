import Foundation
import Postgres
import ReceiptCore

extension OperatorQueries {
    /// What a player owns, under every client's catalog (the operator sees all), with grants past
    /// their end that the sweep has not removed yet marked as such.
    /// Asked client by client: the primary key leads with the client, so each is one index probe,
    /// where `player_id` alone would read the whole table (no index of its own is kept for this
    /// rare page: every entitlement refresh would pay for it).
    func entitlements(of playerID: String) async throws -> [(clientID: String, grant: EntitlementGrant)] {
        try await pool.query(
            """
            SELECT pe.client_id, \(unescaped: EntitlementRows.columns(of: "pe")) FROM clients c
            JOIN player_entitlements pe ON pe.client_id = c.id AND pe.player_id = \(playerID)
            ORDER BY pe.client_id, pe.entitlement
            """
        ).map { (try $0.decode("client_id", as: String.self), try EntitlementRows.grant($0)) }
    }
}
