import Foundation
import Postgres
import ReceiptCore

/// The ledger as the operator sees it in the console: every client's purchases, their attempts,
/// events and subscriptions. Reads only; never scoped to one client (the console is the operator's).
struct OperatorQueries: Sendable {
    let pool: PostgresPool

    /// A ledger row with the caller's player id, which the typed record leaves out.
    struct Purchase: Sendable {
        let record: TransactionRecord
        let playerID: String?
    }

    static let purchaseColumns = TransactionRows.columns

    /// Purchases whose transaction id, original transaction id, order id, player id or account
    /// token is `text`, or that are linked to the account `text`; the newest 50 when `text` is nil.
    /// Each way of matching is its own branch, so that each uses its index.
    /// `stores` are the served ones (a transaction id is looked up in each); `only` the ones shown
    /// (nil: every row, a store no longer served included).
    func purchases(
        matching text: String?, stores: [String], only shown: [String]? = nil, limit: Int = 50
    ) async throws -> [Purchase] {
        guard let text else {
            return try await pool.query(
                """
                SELECT \(unescaped: Self.purchaseColumns) FROM transactions
                WHERE \(shown == nil) OR store = ANY(\(shown ?? [])::text[])
                ORDER BY id DESC LIMIT \(limit)
                """
            ).map(Self.purchase)
        }
        let environments = StoreEnvironment.allCases.map(\.rawValue)
        return try await pool.query(
            """
            WITH hits AS (
                SELECT id FROM transactions WHERE store = ANY(\(stores)::text[]) AND environment = ANY(\(environments)::text[]) AND transaction_id = \(text)
                UNION SELECT id FROM transactions WHERE store = ANY(\(stores)::text[]) AND original_transaction_id = \(text)
                UNION SELECT id FROM transactions WHERE order_id = \(text)
                UNION SELECT t.id FROM clients c JOIN transactions t ON t.client_id = c.id AND t.player_id = \(text)
                UNION SELECT id FROM transactions WHERE account_token = ANY(ARRAY[\(text), lower(\(text)), upper(\(text))])
                UNION SELECT t.id FROM account_links l JOIN transactions t ON t.store = l.store AND t.original_transaction_id = l.original_transaction_id
                      WHERE l.account_id = \(text)
                UNION SELECT t.id FROM account_links l JOIN transactions t ON t.store = l.store AND t.environment = ANY(\(environments)::text[])
                      AND t.transaction_id = l.original_transaction_id WHERE l.account_id = \(text)
            )
            SELECT \(unescaped: Self.purchaseColumns) FROM transactions WHERE id IN (SELECT id FROM hits)
              AND (\(shown == nil) OR store = ANY(\(shown ?? [])::text[]))
            ORDER BY id DESC LIMIT \(limit)
            """
        ).map(Self.purchase)
    }

    /// Purchases with one of these transaction ids in a store (what an order lookup found).
    func purchases(store: StoreID, transactionIDs: [String]) async throws -> [Purchase] {
        guard !transactionIDs.isEmpty else { return [] }
        return try await pool.query(
            """
            SELECT \(unescaped: Self.purchaseColumns) FROM transactions
            WHERE store = \(store.rawValue) AND transaction_id = ANY(\(transactionIDs)::text[]) ORDER BY id DESC LIMIT 50
            """
        ).map(Self.purchase)
    }

    /// The production row first when a transaction id exists in both environments.
    func purchase(store: String, transactionID: String) async throws -> Purchase? {
        try await pool.query(
            """
            SELECT \(unescaped: Self.purchaseColumns) FROM transactions WHERE store = \(store) AND transaction_id = \(transactionID)
            ORDER BY environment = 'production' DESC LIMIT 1
            """
        ).first.map(Self.purchase)
    }

    struct Attempt: Sendable {
        let at: Date, clientID: String?, requestID: String?, outcome: String, reason: String?, message: String?,
            duplicate: Bool?
        let playerID: String?
    }

    /// Every verification attempt about the purchase: those recorded against its row, and the
    /// refused ones that named its transaction.
    func attempts(of purchase: Purchase) async throws -> [Attempt] {
        try await pool.query(
            """
            SELECT created_at, client_id, request_id, outcome, error_reason, error_message, duplicate, player_id FROM verification_attempts
            WHERE id IN (SELECT id FROM verification_attempts WHERE transaction_row_id = \(purchase.record.managementID)
                         UNION SELECT id FROM verification_attempts WHERE store = \(purchase.record.store.rawValue)
                               AND transaction_id = \(purchase.record.transactionID) AND outcome = 'failed')
            ORDER BY id DESC LIMIT 200
            """
        ).map { row in
            Attempt(
                at: try row.decode("created_at"), clientID: try row.decode("client_id"),
                requestID: try row.decode("request_id"),
                outcome: try row.decode("outcome"), reason: try row.decode("error_reason"),
                message: try row.decode("error_message"),
                duplicate: try row.decode("duplicate"), playerID: try row.decode("player_id"))
        }
    }

    /// The outbox messages about the purchase's chain (its original transaction), every client's.
    func events(of purchase: Purchase) async throws -> [OutboxRepository.Event] {
        let key = "\(purchase.record.store.rawValue):\(purchase.record.originalOrSelf)"
        return try await pool.query(
            """
            SELECT \(unescaped: OutboxRepository.eventColumns) FROM outbox WHERE aggregate_key = \(key) ORDER BY id DESC LIMIT 200
            """
        ).map(OutboxRepository.event)
    }

    func subscription(of purchase: Purchase) async throws -> SubscriptionState? {
        try await pool.query(
            """
            SELECT \(unescaped: TransactionRows.subscriptionColumns) FROM subscriptions
            WHERE store = \(purchase.record.store.rawValue) AND environment = \(purchase.record.environment.rawValue)
              AND original_transaction_id = \(purchase.record.originalOrSelf)
            """
        ).first.map(TransactionRows.subscription)
    }

    /// The chain's transactions (a subscription's periods), oldest first.
    func chain(of purchase: Purchase) async throws -> [Purchase] {
        try await pool.query(
            """
            SELECT \(unescaped: Self.purchaseColumns) FROM transactions
            WHERE store = \(purchase.record.store.rawValue) AND environment = \(purchase.record.environment.rawValue)
              AND COALESCE(original_transaction_id, transaction_id) = \(purchase.record.originalOrSelf)
            ORDER BY purchase_date NULLS LAST, id LIMIT 200
            """
        ).map(Self.purchase)
    }

    static func purchase(_ row: PostgresRow) throws -> Purchase {
        let record = try TransactionRows.transaction(row)
        return Purchase(record: record, playerID: record.claim?.claimant.playerID)
    }
}
