import Foundation
import Postgres
import ReceiptCore

extension OperatorQueries {
    /// What a player owns, under every client's catalog (the operator sees all), with grants past
    /// their end that the sweep has not removed yet marked as such.
    func entitlements(of playerID: String) async throws -> [(clientID: String, grant: EntitlementGrant)] {
        try await pool.query("""
            SELECT client_id, \(unescaped: EntitlementRows.written) FROM player_entitlements
            WHERE player_id = \(playerID) ORDER BY client_id, entitlement
            """).map { (try $0.decode("client_id", as: String.self), try EntitlementRows.grant($0)) }
    }
}
