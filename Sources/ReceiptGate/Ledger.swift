public import Crypto
public import Foundation
public import Postgres
public import ReceiptCore

/// The Postgres record of every verified transaction and every verification attempt. Exactly
/// once is decided by the unique key (store, environment, transaction id) and `ON CONFLICT`,
/// never by reading first; a 200 is only ever sent after the row is committed.
public struct Ledger: Sendable {
    let pool: PostgresPool

    public init(pool: PostgresPool) { self.pool = pool }

    public struct Context: Sendable {
        public var client: Client
        public var requestID: String
        public var playerID: String?
        public var characterID: String?
        public var serverID: String?
        public var evidenceDigest: String
    }

    /// Records the purchase once. Returns the ledger's row and whether it already existed.
    /// Throws DUPLICATE_TRANSACTION when another game already redeemed it.
    public func record(_ purchase: VerifiedPurchase, context: Context) async throws -> (transaction: LedgerTransaction, duplicate: Bool) {
        let state = Self.state(of: purchase)
        let client = context.client
        return try await pool.withTransaction { connection in
            let inserted = try connection.query("""
                INSERT INTO transactions (store, environment, transaction_id, original_transaction_id, order_id, product_id, product_kind,
                    quantity, price_milliunits, currency, storefront, app_identifier, purchase_date, expires_date, revocation_date,
                    revocation_reason, ownership, account_token, state, client_id, game_id, player_id, character_id, server_id)
                VALUES (\(purchase.store.rawValue), \(purchase.environment.rawValue), \(purchase.transactionID), \(purchase.originalTransactionID),
                    \(purchase.orderID), \(purchase.productID), \(purchase.kind?.rawValue), \(purchase.quantity), \(purchase.priceMilliunits),
                    \(purchase.currency), \(purchase.storefront), \(purchase.appIdentifier), \(purchase.purchaseDate), \(purchase.expiresDate),
                    \(purchase.revocationDate), \(purchase.revocationReason), \(purchase.ownership?.rawValue), \(purchase.accountToken),
                    \(state), \(client.clientID), \(client.gameID), \(context.playerID), \(context.characterID), \(context.serverID))
                ON CONFLICT (store, environment, transaction_id) DO NOTHING
                RETURNING \(unescaped: LedgerTransaction.columns)
                """)
            let transaction: LedgerTransaction
            let duplicate: Bool
            if let row = inserted.first {
                transaction = try LedgerTransaction(row: row)
                duplicate = false
                if purchase.kind == .autoRenewableSubscription, let original = purchase.originalTransactionID {
                    try Self.upsertSubscription(connection, purchase: purchase, original: original, client: client)
                }
                let aggregate = "\(purchase.store.rawValue):\(purchase.originalTransactionID ?? purchase.transactionID)"
                if client.webhookURL != nil {
                    try Outbox.enqueue(connection, client: client, type: "transaction.verified", aggregateKey: aggregate, payload: ["transaction": transaction])
                }
                if client.deliveryURL != nil {
                    // Server-authoritative delivery (seed 001): once per transaction, never for a duplicate.
                    try Outbox.enqueue(connection, client: client, type: "entitlement.delivery", aggregateKey: aggregate,
                                       payload: Delivery(transaction: transaction, playerID: context.playerID, characterID: context.characterID,
                                                         serverID: context.serverID, gameID: client.gameID),
                                       target: .delivery)
                }
            } else {
                let existing = try connection.query("""
                    SELECT \(unescaped: LedgerTransaction.columns) FROM transactions
                    WHERE store = \(purchase.store.rawValue) AND environment = \(purchase.environment.rawValue) AND transaction_id = \(purchase.transactionID)
                    """)
                guard let row = existing.first else {
                    throw PostgresError(.queryFailed, "conflicting transaction row vanished")
                }
                transaction = try LedgerTransaction(row: row)
                duplicate = true
                guard transaction.isVisible(to: client) else {
                    throw StoreVerificationError(code: .duplicateTransaction, reason: "REDEEMED_BY_ANOTHER_GAME",
                                                 message: "this purchase was already verified for another game")
                }
            }
            try connection.execute("""
                INSERT INTO verification_attempts (client_id, store, request_id, outcome, transaction_row_id, duplicate, player_id, evidence_sha256)
                VALUES (\(client.clientID), \(purchase.store.rawValue), \(context.requestID), \("verified"), \(transaction.id), \(duplicate),
                        \(context.playerID), \(context.evidenceDigest))
                """)
            return (transaction, duplicate)
        }
    }

    /// Records a failed attempt, so support sees what reached us. Never throws: a failure to log
    /// must not change the answer.
    public func recordFailure(clientID: String?, store: String?, requestID: String, playerID: String?, evidenceDigest: String?,
                              code: String, reason: String?, message: String) async {
        _ = try? await pool.execute("""
            INSERT INTO verification_attempts (client_id, store, request_id, outcome, error_code, error_reason, error_message, player_id, evidence_sha256)
            VALUES (\(clientID), \(store), \(requestID), \("failed"), \(code), \(reason), \(String(message.prefix(1000))), \(playerID), \(evidenceDigest))
            """)
    }

    /// What the delivery webhook carries: the transaction to grant, and to whom.
    struct Delivery: Encodable {
        let transaction: LedgerTransaction
        let playerID: String?, characterID: String?, serverID: String?, gameID: Int64?

        enum CodingKeys: String, CodingKey {
            case transaction, playerID = "player_id", characterID = "character_id", serverID = "server_id", gameID = "game_id"
            case transactionID = "transaction_id"
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(transaction.transactionID, forKey: .transactionID)
            try container.encode(transaction, forKey: .transaction)
            try container.encode(playerID, forKey: .playerID)
            try container.encode(characterID, forKey: .characterID)
            try container.encode(serverID, forKey: .serverID)
            try container.encode(gameID, forKey: .gameID)
        }
    }

    static func state(of purchase: VerifiedPurchase) -> String {
        if purchase.revocationDate != nil { return purchase.revocationReason == nil ? "revoked" : "refunded" }
        if let expires = purchase.expiresDate, expires < Date() { return "expired" }
        return "active"
    }

    static func upsertSubscription(_ connection: PostgresConnection, purchase: VerifiedPurchase, original: String, client: Client) throws {
        try connection.execute("""
            INSERT INTO subscriptions (store, environment, original_transaction_id, product_id, status, expires_date, revocation_date,
                                       latest_transaction_id, client_id)
            VALUES (\(purchase.store.rawValue), \(purchase.environment.rawValue), \(original), \(purchase.productID), \(state(of: purchase)),
                    \(purchase.expiresDate), \(purchase.revocationDate), \(purchase.transactionID), \(client.clientID))
            ON CONFLICT (store, environment, original_transaction_id) DO UPDATE SET
                product_id = EXCLUDED.product_id,
                status = EXCLUDED.status,
                expires_date = EXCLUDED.expires_date,
                revocation_date = EXCLUDED.revocation_date,
                latest_transaction_id = EXCLUDED.latest_transaction_id,
                updated_at = now()
            WHERE subscriptions.expires_date IS NULL OR EXCLUDED.expires_date >= subscriptions.expires_date
            """)
    }
}

/// Messages owed to game servers, written in the same database transaction as the change they
/// announce. (Delivery is the outbox worker's.)
enum Outbox {
    /// What every webhook carries: a stable event id (the same on every retry), its type, its data.
    struct Envelope<Payload: Encodable>: Encodable {
        let eventID: String
        let type: String
        let data: Payload
        enum CodingKeys: String, CodingKey { case eventID = "event_id", type, data }
    }

    static func enqueue(_ connection: PostgresConnection, client: Client, type: String, aggregateKey: String,
                        payload: some Encodable, target: Target = .webhook) throws {
        let eventID = UUID()
        let body = try JSONEncoder.receiptGateStorage.encode(Envelope(eventID: eventID.uuidString.lowercased(), type: type, data: payload))
        try insert(connection, eventID: eventID, client: client, type: type, aggregateKey: aggregateKey, body: body, target: target)
    }

    /// A message whose body a dialect rendered (e.g. the Alogame refund callback), sent as is.
    static func enqueueRaw(_ connection: PostgresConnection, client: Client, type: String, aggregateKey: String, body: Data, target: Target) throws {
        try insert(connection, eventID: UUID(), client: client, type: type, aggregateKey: aggregateKey, body: body, target: target)
    }

    private static func insert(_ connection: PostgresConnection, eventID: UUID, client: Client, type: String, aggregateKey: String,
                               body: Data, target: Target) throws {
        try connection.execute("""
            INSERT INTO outbox (event_id, client_id, event_type, aggregate_key, payload, target)
            VALUES (\(eventID), \(client.clientID), \(type), \(aggregateKey), \(String(decoding: body, as: UTF8.self))::jsonb, \(target.rawValue))
            """)
    }

    /// Which of the client's URLs a message goes to.
    enum Target: String, Sendable {
        case webhook
        case refundCallback = "refund_callback"
        case delivery
    }
}

extension JSONEncoder {
    static var receiptGateStorage: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}
