import Foundation
import Postgres
import ReceiptCore

/// A store's consent revocation, recorded with the notification that told it: for each client
/// whose app it is, the players the ledger knows under the buyer's account, and (when there is at
/// least one, and a webhook URL) a `player.consent_revoked` webhook naming them all, queued in the
/// same database transaction. Kept for the console either way.
enum ConsentRevocationLedger {
    static let webhookType = "player.consent_revoked"

    /// The webhook's `data`.
    struct Webhook: Encodable {
        let store: String
        let environment: String?
        let appIdentifier: String?
        let appTransactionID: String
        let playerIDs: [String]
        let notificationID: String
        let revokedAtMs: Int64?

        enum CodingKeys: String, CodingKey {
            case store, environment
            case appIdentifier = "app_identifier", appTransactionID = "app_transaction_id", playerIDs = "player_ids"
            case notificationID = "notification_id", revokedAtMs = "revoked_at_ms"
        }

        /// Every key present, null when unknown, as in every webhook.
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(store, forKey: .store)
            try container.encode(environment, forKey: .environment)
            try container.encode(appIdentifier, forKey: .appIdentifier)
            try container.encode(appTransactionID, forKey: .appTransactionID)
            try container.encode(playerIDs, forKey: .playerIDs)
            try container.encode(notificationID, forKey: .notificationID)
            try container.encode(revokedAtMs, forKey: .revokedAtMs)
        }
    }

    /// `kind`: how the store names apps, to find the clients the notification's app is registered to.
    static func record(
        _ news: ConsentRevocationNews, told notification: StoreNotification, kind: AppIdentifierKind?,
        on connection: PostgresConnection
    ) throws {
        let owners = try Self.owners(of: notification, kind: kind, on: connection)
        guard !owners.isEmpty else {
            try insert(news, told: notification, clientID: nil, players: [], queued: false, on: connection)
            return
        }
        for owner in owners {
            let players =
                try news.appTransactionID.map {
                    try Self.players(known: $0, store: notification.store, client: owner.clientID, on: connection)
                } ?? []
            let queues = !players.isEmpty && owner.webhookURL != nil
            guard
                try insert(
                    news, told: notification, clientID: owner.clientID, players: players, queued: queues,
                    on: connection)
            else { continue }
            if queues, let appTransactionID = news.appTransactionID {
                let webhook = Webhook(
                    store: notification.store.rawValue, environment: notification.environment?.rawValue,
                    appIdentifier: notification.appIdentifier, appTransactionID: appTransactionID,
                    playerIDs: players, notificationID: notification.notificationID,
                    revokedAtMs: notification.signedAt.map { Int64(($0.timeIntervalSince1970 * 1000).rounded()) })
                try OutboxRepository.enqueue(
                    event: webhookType, payload: webhook, client: owner.clientID,
                    aggregateKey: "\(notification.store.rawValue):consent:\(appTransactionID)", on: connection)
            }
        }
    }

    /// The enabled clients that registered the notification's app and accept its environment (or
    /// the one client a per-client route named).
    private static func owners(
        of notification: StoreNotification, kind: AppIdentifierKind?, on connection: PostgresConnection
    ) throws -> [Client] {
        if let clientID = notification.clientID {
            return try connection.query(
                "SELECT \(unescaped: ClientRepository.columns) FROM clients WHERE id = \(clientID) AND disabled_at IS NULL"
            ).map(ClientRepository.decode)
        }
        guard let kind, let app = notification.appIdentifier, let environment = notification.environment else {
            return []
        }
        return try connection.query(
            """
            SELECT \(unescaped: ClientRepository.columns) FROM clients
            WHERE disabled_at IS NULL AND app_identifiers -> \(kind.name) ? \(app)
              AND \(environment.rawValue) = ANY (environments)
            ORDER BY created_at, id
            """
        ).map(ClientRepository.decode)
    }

    /// Every player of the client under the buyer's account: those its purchases were claimed for,
    /// and those an app ownership check was made for.
    static func players(
        known appTransactionID: String, store: StoreID, client: String, on connection: PostgresConnection
    ) throws -> [String] {
        try connection.query(
            """
            SELECT player_id FROM transactions
            WHERE app_transaction_id = \(appTransactionID) AND store = \(store.rawValue) AND client_id = \(client)
              AND player_id IS NOT NULL
            UNION
            SELECT player_id FROM app_transaction_players
            WHERE client_id = \(client) AND store = \(store.rawValue) AND app_transaction_id = \(appTransactionID)
            ORDER BY player_id
            """
        ).map { try $0.decode("player_id", as: String.self) }
    }

    /// False when this notification was recorded for this client already.
    private static func insert(
        _ news: ConsentRevocationNews, told notification: StoreNotification, clientID: String?, players: [String],
        queued: Bool, on connection: PostgresConnection
    ) throws -> Bool {
        try !connection.query(
            """
            INSERT INTO consent_revocations (store, notification_id, environment, app_identifier, client_id,
                app_transaction_id, player_ids, webhook_queued, revoked_at)
            VALUES (\(notification.store.rawValue), \(notification.notificationID), \(notification.environment?.rawValue),
                    \(notification.appIdentifier), \(clientID), \(news.appTransactionID), \(players)::text[], \(queued),
                    \(notification.signedAt))
            ON CONFLICT DO NOTHING
            RETURNING id
            """
        ).isEmpty
    }
}
