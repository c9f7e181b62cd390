import Foundation
import Postgres
import ReceiptCore

/// Which players a client's buyer account in an app was proven for: kept when an app ownership
/// check names a player, so a later consent revocation of the account names them too.
struct AppTransactionPlayerRepository: Sendable {
    let pool: PostgresPool

    func keep(_ ownership: AppOwnership, store: StoreID, player: String, clientID: String) async throws {
        try await pool.execute(
            """
            INSERT INTO app_transaction_players (client_id, store, environment, app_transaction_id, player_id)
            VALUES (\(clientID), \(store.rawValue), \(ownership.environment.rawValue), \(ownership.appTransactionID), \(player))
            ON CONFLICT DO NOTHING
            """)
    }
}
