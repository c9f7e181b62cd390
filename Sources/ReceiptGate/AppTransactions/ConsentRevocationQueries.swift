import Foundation
import Postgres

/// The consent revocations on record, newest first, for the console.
struct ConsentRevocationQueries: Sendable {
    let pool: PostgresPool

    struct Row: Sendable {
        let store: String, notificationID: String, environment: String?, appIdentifier: String?
        let clientID: String?, appTransactionID: String?, playerIDs: [String], webhookQueued: Bool
        let revokedAt: Date?, receivedAt: Date
    }

    func latest(limit: Int) async throws -> [Row] {
        try await pool.query(
            """
            SELECT store, notification_id, environment, app_identifier, client_id, app_transaction_id, player_ids,
                   webhook_queued, revoked_at, received_at
            FROM consent_revocations ORDER BY received_at DESC, id DESC LIMIT \(limit)
            """
        ).map { row in
            Row(
                store: try row.decode("store"), notificationID: try row.decode("notification_id"),
                environment: try row.decode("environment"), appIdentifier: try row.decode("app_identifier"),
                clientID: try row.decode("client_id"), appTransactionID: try row.decode("app_transaction_id"),
                playerIDs: try row.decode("player_ids"), webhookQueued: try row.decode("webhook_queued"),
                revokedAt: try row.decode("revoked_at"), receivedAt: try row.decode("received_at"))
        }
    }
}
